import { z } from 'zod';
import { freeText } from './text.js';
import type { PlanRef } from './plans.js';

/**
 * Lifecycle events the parent's systems can subscribe to. Safe to import from workflows (types and
 * plain data only; the zod schemas are for the ways in: CLI, gateway, client helpers).
 */
export const EVENT_TYPES = [
  'tenant.onboarded',
  'tenant.onboarding_failed',
  'tenant.waiting_for_funds',
  'transfer.succeeded',
  'transfer.needs_operator',
  'tenant.suspended',
  'tenant.resumed',
  'tenant.closing',
  'tenant.closed',
  'key.issued',
  'key.rotated',
  'rotation.held',
  'rotation.key_limit',
  'wallet.low_balance',
  'drift.finding_opened',
  'drift.finding_resolved',
  'tenant.plan_changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Types declared for subscribers before anything emits them (none now: `tenant.plan_changed` is written
 * by an onboarding by plan). Subscribing to one is allowed; the events test expects none of them yet.
 */
export const EVENT_TYPES_NOT_YET_EMITTED: readonly EventType[] = [];

/** The data of `tenant.plan_changed`: the plan version a tenant left (null: it was on none) and the one it is on. */
export interface PlanChangedEventData {
  externalRef: string;
  from: PlanRef | null;
  to: PlanRef;
}

/** The stream of events without a tenant (parent-wide); a tenant's stream is its external ref. */
export const PARENT_STREAM = '';

/**
 * The URL's form only. Where it may point (https; inward hosts and plain http only as OUTBOUND_ALLOW_HOSTS
 * allows) is the outbound rule, src/domain/outbound-rule.ts, applied where a subscription is made and at connect.
 */
export function subscriptionUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash) return 'must not have a #fragment';
  if (url.protocol === 'https:' || url.protocol === 'http:') return undefined;
  return 'must be an absolute http(s) URL';
}

const urlSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .max(2000, 'must be at most 2000 characters')
  // The URL is stored as given: a control or space character would reach Postgres (NUL: refused there) or the logs.
  .regex(/^[^\s\p{Cc}\p{Cf}\p{Cs}]*$/u, 'must not contain white space, control or format characters')
  .superRefine((value, ctx) => {
    const problem = subscriptionUrlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const typesSchema = z
  .array(z.string(), {
    error: (issue) => (issue.input === undefined ? 'is required' : 'must be a list of event types'),
  })
  .min(1, `must name at least one event type, or * for all`)
  .superRefine((types, ctx) => {
    if (types.includes('*') && types.length > 1) ctx.addIssue({ code: 'custom', message: '* must be alone' });
    const unknown = types.filter((t) => t !== '*' && !(EVENT_TYPES as readonly string[]).includes(t));
    if (unknown.length)
      ctx.addIssue({
        code: 'custom',
        message:
          `unknown event type ${unknown.map((t) => JSON.stringify(t.slice(0, 60))).join(', ')} ` +
          `(known: ${EVENT_TYPES.join(', ')})`,
      });
    if (new Set(types).size !== types.length) ctx.addIssue({ code: 'custom', message: 'must not repeat a type' });
  });

export const subscribeInputSchema = z.strictObject({
  url: urlSchema,
  types: typesSchema,
  label: freeText({ min: 0, max: 100 }).default(''),
});
export type SubscribeInput = z.input<typeof subscribeInputSchema>;

/** A subscription's types, in one canonical order (so a duplicate is found whatever order it was given in). */
export function canonicalTypes(types: readonly string[]): string[] {
  return types.includes('*') ? ['*'] : [...types].sort();
}

/** What a delivery workflow reports per outcome (metrics and `events deliveries`). */
export const DeliveryState = { pending: 'pending', delivered: 'delivered', failed: 'failed' } as const;
export type DeliveryState = (typeof DeliveryState)[keyof typeof DeliveryState];

// The delivery workflows' inputs and signal live in event-streams.ts: workflow code imports them, and this module
// builds zod schemas, which must stay out of the workflow bundle (its modules run again for every workflow).
export {
  EVENTS_PENDING_SIGNAL,
  type DeliverEventStreamInput,
  type DispatchEventsInput,
  type StreamPolicy,
} from './event-streams.js';
