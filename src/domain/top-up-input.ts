import { z } from 'zod';
import { durationSchema, externalRefSchema, microUsdSchema } from './tenant-input.js';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE } from './top-up-ids.js';
import { DURATION_PATTERN, msOf } from './durations.js';
import { freeText } from './text.js';
import { continuedSchema, waitBoundOptions } from './wait-options.js';

/**
 * Top-up inputs, shared by every way in (the HTTP route, tenantctl fund, startTopUp, a Web-UI start
 * of fundTenant): the same schema, so a bad value gives the same `field: rule` everywhere.
 */
export const idempotencyKeySchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(IDEMPOTENCY_KEY_PATTERN, `must be ${IDEMPOTENCY_KEY_RULE}`);

const REQUESTED_BY_RULE = '1-100 characters of A-Z a-z 0-9 . _ @ : -';
export const requestedBySchema = z
  .string({ error: 'must be a string' })
  .regex(/^[A-Za-z0-9._@:-]{1,100}$/, `must be ${REQUESTED_BY_RULE}`);
export const topUpReasonSchema = freeText({ min: 3, max: 500, multiline: true });

const wait = durationSchema.refine(
  (value) => (typeof value === 'number' ? value > 0 : !DURATION_PATTERN.test(value) || msOf(value) > 0),
  'must be longer than zero',
);

const topUpOptionsSchema = z.strictObject({
  /** How often a transfer refused for INSUFFICIENT_BALANCE is retried when no parentFunded comes. */
  balanceRetryInterval: wait.optional(),
  /** How long an ambiguous transfer may stay unknown before an operator is asked. */
  unknownTransferDeadline: wait.optional(),
  /** How often an unknown transfer is reconciled. */
  reconcileInterval: wait.optional(),
  ...waitBoundOptions,
});

/** fundTenant's input (a Web-UI start types exactly this). `kind: auto` is the sweep's. */
export const fundTenantInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  idempotencyKey: idempotencyKeySchema,
  amountMicroUsd: microUsdSchema,
  reason: topUpReasonSchema.optional(),
  requestedBy: requestedBySchema.default('unknown'),
  kind: z.enum(['top-up', 'auto']).default('top-up'),
  /** Auto top-ups: the database time just before the wallet read this amount was computed from. */
  balanceReadAt: z.iso.datetime({ offset: true }).optional(),
  options: topUpOptionsSchema.optional(),
  /** The state a top-up that continued as new hands to its next run (workflows/fund-tenant.ts). */
  continued: continuedSchema,
});
export type FundTenantInput = z.input<typeof fundTenantInputSchema>;
export type ParsedFundTenantInput = z.output<typeof fundTenantInputSchema>;

/** The body of `POST /v1/tenants/:ref/transfers` (the key is the Idempotency-Key header, the ref the path). */
export const topUpBodySchema = z.strictObject({
  amountMicroUsd: microUsdSchema,
  reason: topUpReasonSchema.optional(),
  requestedBy: requestedBySchema.optional(),
});

/**
 * What makes two requests under one key "the same": the amount and the reason. A reused key with
 * either different is refused (422 at the gateway), never joined. Who asked is recorded from the
 * first request but not compared: the same key may come through the API and tenantctl.
 */
export interface TopUpRequestFields {
  amountMicroUsd: string;
  reason?: string | null | undefined;
}

export function sameTopUpRequest(a: TopUpRequestFields, b: TopUpRequestFields): boolean {
  return a.amountMicroUsd === b.amountMicroUsd && (a.reason ?? null) === (b.reason ?? null);
}
