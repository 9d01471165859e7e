import { isDeepStrictEqual } from 'node:util';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { FailureCode } from '../../src/domain/failures.js';
import { backoffDelayMs } from '../../src/domain/poll-backoff.js';
import type { KeyUsage } from './rotation.js';

/**
 * The quiet gate's watch (QUIET_GATE_WATCH_PATCH): the gate's looks while nothing changes, as one activity's
 * attempts. Each attempt reads the key records once; while the old keys' records are as the workflow last saw
 * them and the verdict cannot have changed yet, the attempt fails as BENIGN with `nextRetryDelay` set to the
 * gate's next poll interval. An attempt that retries adds no history event and no workflow task: a quiet gate
 * of an hour costs the run two workflow tasks, not two per look. Each attempt is dispatched through the platform
 * queue again, so the looks stay under the queue's server-side rate limit like every other platform call.
 *
 * The watch returns the observation when an old key's record changed, when the new key first shows a use the
 * workflow still needs (deploy time on the platform's clock), or at the first look at or after `untilMs`, the
 * earliest moment the verdict could leave "wait" by time alone (or the allowance's end, workflows/keys/quiet-gate.ts
 * `watchUntilMs`). Times are the server's (`currentAttemptScheduledTimestampMs`), the clock the workflow judges by.
 *
 * An attempt keeps nothing for the next (no heartbeat: measured, heartbeats per look cost the worker 90 MB of RSS
 * and the server more than the looks saved in the fleet bench). Its delay follows from its attempt number, and the
 * workflow judges a change by its own previous look, which `watchUntilMs` keeps on the same side of the allowance's
 * end as every look of the watch.
 */
export interface WatchKeyUsageInput {
  subaccountId: string;
  /** The old keys the gate waits for, in the order the workflow judges them. */
  keyIds: string[];
  /** A rotation's new key (a slot's revoke has none). */
  newKeyId?: string;
  /** The new key's first use is still wanted (some gate memory has no platform deploy time yet). */
  freshNeeded: boolean;
  /** The old keys' records as the workflow's last look saw them. */
  seen: Record<string, KeyUsage | null>;
  /** The first look is not taken before this (the gate's next poll). */
  firstLookMs: number;
  /** At the first look at or after this, the watch returns whatever it sees. */
  untilMs: number;
  /** The gate's backoff: the interval after look n of this watch is backoffDelayMs(base, ceiling, polls + n). */
  delays: { baseMs: number; ceilingMs: number; polls: number };
}

export interface WatchKeyUsageResult {
  usage: Record<string, KeyUsage | null>;
  /** When the look that returned began (server time). */
  lookedAtMs: number;
  /** The looks this watch took: its attempts after the first look was due (one the platform failed counts too). */
  looks: number;
}

type Observe = (input: { subaccountId: string; keyIds: string[] }) => Promise<Record<string, KeyUsage | null>>;

/** The activity, over the one read of key records the gate's looks all make (observeKeyUsage). */
export function watchThenObserve(observe: Observe) {
  return async (input: WatchKeyUsageInput): Promise<WatchKeyUsageResult> => {
    const { info } = Context.current();
    const atMs = info.currentAttemptScheduledTimestampMs;
    if (atMs < input.firstLookMs) throw stillWatching(input.firstLookMs - atMs, 'the first look is not due yet');
    const keyIds = input.newKeyId ? [...input.keyIds, input.newKeyId] : input.keyIds;
    const usage = await observe({ subaccountId: input.subaccountId, keyIds });
    // The first attempt only waited when the first look was not due as the watch was scheduled.
    const looks = info.attempt - (info.scheduledTimestampMs < input.firstLookMs ? 1 : 0);
    if (atMs >= input.untilMs || changed(input, usage)) return { usage, lookedAtMs: atMs, looks };
    const { baseMs, ceilingMs, polls } = input.delays;
    const delayMs = Math.min(backoffDelayMs(baseMs, ceilingMs, polls + looks), input.untilMs - atMs);
    throw stillWatching(delayMs, `no change in the key records after ${looks} look(s)`);
  };
}

/** Whether this look shows what the workflow has to judge: an old key's record moved, or the new key's first use. */
export function changed(
  input: Pick<WatchKeyUsageInput, 'keyIds' | 'newKeyId' | 'freshNeeded' | 'seen'>,
  usage: Record<string, KeyUsage | null>,
) {
  if (input.keyIds.some((id) => !isDeepStrictEqual(comparable(usage[id]), comparable(input.seen[id])))) return true;
  const fresh = input.newKeyId ? usage[input.newKeyId] : null;
  return input.freshNeeded && Boolean(fresh?.lastUseKnown && fresh.lastUsedAt);
}

/** A record as it crossed Temporal (JSON): absent fields and `undefined` ones compare equal. */
function comparable(usage: KeyUsage | null | undefined): unknown {
  return usage ? JSON.parse(JSON.stringify(usage)) : null;
}

/** The retry that is the next look: benign (logged at debug, not counted as a failure), after `delayMs`. */
function stillWatching(delayMs: number, why: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureCode.QUIET_GATE_WATCHING,
    message: `quiet gate: ${why}; next look in ${Math.max(1, Math.round(delayMs))} ms`,
    nonRetryable: false,
    nextRetryDelay: Math.max(1, Math.round(delayMs)),
    category: ApplicationFailureCategory.BENIGN,
  });
}
