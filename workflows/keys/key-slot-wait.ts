import { condition } from '@temporalio/workflow';
import type { Backoff, Waits } from '../waits.js';

/**
 * The wait at the platform's active-key limit, one rule for every key workflow (rotateTenantKey,
 * adoptTenantKeys, issueTenantKey, rotateParentKey): try the create; at the limit say so (stage
 * `key_limit` in `currentWait`, with the decisions that apply and when the create is tried again by
 * itself), wait for `retryKeyCreate`, an abort or the backing-off timer, and try again. It never
 * revokes a key to make room: only an operator knows which key nobody needs. Past the history bound
 * the run continues as new before its next create (workflows/waits.ts), carrying `backoff.polls`.
 *
 * What the workflows differ in is a parameter: the create itself, what they record and show at the
 * limit, the decisions they list, what they do after a wait, and their continuation.
 */
export interface KeySlotDecisions {
  /** `retryKeyCreate` was accepted: try the create now (cleared before each wait). */
  retry: boolean;
  /** An abort was accepted: create nothing more. */
  aborted(): boolean;
}

export type KeyLimitOf<T> = Extract<T, { state: 'key_limit' }>;

export interface KeySlotWait<T extends { state: string }> {
  waits: Waits;
  backoff: Backoff;
  decisions: KeySlotDecisions;
  /** The decisions (Update names) to list while the run waits at the limit. */
  applicable(): readonly string[];
  /** One create: its result, or `key_limit` with the platform's active keys. */
  create(): Promise<T>;
  /**
   * At the limit: record it and update the run's status (stage `key_limit`); returns what the run waits
   * for, in one sentence. `waitMs`: when the create is tried again by itself.
   */
  atLimit(limit: KeyLimitOf<T>, waitMs: number): Promise<string> | string;
  /** After a wait that did not end in an abort, before the next create. */
  afterWait?(waitMs: number): Promise<void> | void;
  /** Whether the run continues as new now (historyFull, or the workflow's own guard on it). */
  full(): boolean;
  /** Continues as new with the run's state (throws ContinueAsNew). */
  continueAsNew(): Promise<never>;
}

/** The created result, or `aborted` when an abort was accepted (nothing more was created). */
export async function waitForKeySlot<T extends { state: string }>(
  w: KeySlotWait<T>,
): Promise<Exclude<T, { state: 'key_limit' }> | 'aborted'> {
  for (;;) {
    if (w.decisions.aborted()) return 'aborted';
    if (w.full()) await w.continueAsNew();
    const result = await w.create();
    if (result.state !== 'key_limit') return result as Exclude<T, { state: 'key_limit' }>;
    const waitMs = w.backoff.next();
    const waitingFor = await w.atLimit(result as KeyLimitOf<T>, waitMs);
    w.waits.enter('key_limit', waitingFor, w.applicable(), waitMs);
    w.decisions.retry = false;
    await condition(() => w.decisions.retry || w.decisions.aborted(), waitMs);
    if (w.decisions.aborted()) return 'aborted';
    await w.afterWait?.(waitMs);
  }
}
