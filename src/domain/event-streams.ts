/**
 * The event delivery workflows' inputs and signal name. Workflow code imports this module, so it imports nothing:
 * above all no zod (the workflow sandbox evaluates every bundled module again for each workflow it starts, and
 * zod's schema builders made that a fifth of a worker's workflow CPU; see test/unit/workflow-bundle.test.ts).
 */

/**
 * Event subscription ids: `esub_` and 12 characters, their own prefix (the platform's sub-accounts are
 * `sub_…`). Subscriptions made before this prefix have ids `sub_…`: they are stored as they were and stay
 * valid for every lookup, rotation, replay, deletion and delivery (an id is only ever compared whole).
 */
const SUBSCRIPTION_ID_PREFIX = 'esub_';
const LEGACY_SUBSCRIPTION_ID_PREFIX = 'sub_';
export const SUBSCRIPTION_ID_RULE =
  `a subscription id (${SUBSCRIPTION_ID_PREFIX}…, or ` + `${LEGACY_SUBSCRIPTION_ID_PREFIX}… made before)`;

/** A new subscription's id from 12 random characters of A-Z a-z 0-9. */
export function subscriptionIdOf(random: string): string {
  return `${SUBSCRIPTION_ID_PREFIX}${random}`;
}

/** Timings of a delivery stream (durations like 30s, 24h, or ms), so tests can use seconds. */
export interface StreamPolicy {
  /** How long one delivery is retried before it is marked failed (default 24h). */
  retryFor?: string | number;
  /** First retry interval (default 1s); doubles up to maximumInterval (default 10m). */
  initialInterval?: string | number;
  maximumInterval?: string | number;
  /** A stream with nothing to send waits this long for more before its workflow ends (default 1m). */
  idleFor?: string | number;
}

export interface DeliverEventStreamInput {
  subscriptionId: string;
  /** A tenant's external ref, or '' (parent-wide). */
  stream: string;
  policy?: StreamPolicy;
}

export interface DispatchEventsInput {
  /** Events fanned out per round (default 500). */
  batch?: number;
  /** How long one dispatcher round waits for new events (ms, default 5000). */
  waitMs?: number;
  policy?: StreamPolicy;
}

/** Signalled to a stream workflow (with start) whenever it has new pending deliveries. */
export const EVENTS_PENDING_SIGNAL = 'eventsPending';
