import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import type { KeyUsage, LastUseExpectation } from '../../activities/keys/rotation.js';
import { msOf } from '../../src/domain/durations.js';
import { FailureCode } from '../../src/domain/failures.js';
import type { DEFAULT_TIMINGS } from '../../src/domain/rotation-defaults.js';
import type { QuietCheckView } from './rotate-tenant-key-messages.js';

/**
 * The quiet gate, as a pure function of what has been observed (deterministic, no I/O).
 *
 * The old key is quiet when all of these hold:
 *  1. the propagation allowance has passed since deploy (consumers had time to switch);
 *  2. its last use is not later than deploy + allowance — a later use means a consumer never
 *     switched: the gate can then never pass, so the run is held for an operator at once;
 *  3. it has not been used for the quiet period.
 *
 * Last use the platform shows under fields we cannot read (the reading is `unknown`, `unrecognised`)
 * is never taken for "no use": the run is held for an operator at once. Only when the platform
 * shows nothing that could be last use does the overlap window stand in for the quiet check.
 *
 * Clocks: platform timestamps are only compared with platform timestamps (deploy time on the
 * platform's clock is the new key's first use, right after it is verified), and durations are
 * measured on the workflow's clock from when a last-use value was first seen. Skew between our
 * clock and the platform's therefore never decides a revocation.
 */
export interface GateTimings {
  quietPeriodMs: number;
  propagationAllowanceMs: number;
  /**
   * The time since the previous look (the read before this one). A caller whose polls back off passes
   * the interval it actually waited, not the configured one: a use first seen now happened after the
   * previous look, and that is what judges a late use.
   */
  pollIntervalMs: number;
  quietDeadlineMs: number;
  overlapWindowMs: number;
}

export interface GateMemory {
  deployedAtMs: number;
  deployedAtPlatform: string | null;
  /** The current last-use value and when it was first seen. */
  lastSeen: { value: string | null; firstSeenAtMs: number } | null;
  /**
   * The previous look before the one that first saw `lastSeen`, which did not show it: the use happened
   * after then (from the interval passed with that look). Absent in memories from before it existed:
   * the current interval then stands in.
   */
  lastSeenAfterMs?: number;
  polls: number;
}

export type GateDecision =
  /** `observed`: the old key as the gate saw it when it passed, for the revoke's own re-check. */
  | { kind: 'quiet'; view: QuietCheckView; observed: KeyUsage }
  | { kind: 'gone'; view: QuietCheckView }
  | { kind: 'wait'; view: QuietCheckView }
  | { kind: 'held'; reason: 'deadline' | 'used_after_allowance' | 'last_use_unknown'; view: QuietCheckView };

export function evaluateGate(
  memory: GateMemory,
  old: KeyUsage | null,
  fresh: KeyUsage | null,
  nowMs: number,
  t: GateTimings,
): GateDecision {
  memory.polls += 1;
  if (memory.deployedAtPlatform === null && fresh?.lastUseKnown && fresh.lastUsedAt)
    memory.deployedAtPlatform = fresh.lastUsedAt;
  const base = {
    polls: memory.polls,
    deployedAtPlatform: memory.deployedAtPlatform,
    oldKeyLastUsedAt: old?.lastUsedAt ?? null,
    lateUseAt: null,
    quietForMs: 0,
  };
  const sinceDeploy = nowMs - memory.deployedAtMs;

  if (!old || old.status === 'revoked') {
    return {
      kind: 'gone',
      view: { ...base, method: 'last-use', verdict: 'the old key is already revoked or gone on the platform' },
    };
  }
  if (!old.lastUseKnown && old.lastUse?.state === 'unknown' && old.lastUse.reason === 'unrecognised') {
    const verdict =
      `the key record shows fields that could be last use but cannot be read (${old.lastUse.candidates.join(', ')}): ` +
      `last use is unknown, never taken for "no use"`;
    return { kind: 'held', reason: 'last_use_unknown', view: { ...base, method: 'unknown', verdict } };
  }
  if (!old.lastUseKnown) {
    const view = { ...base, method: 'overlap-window' as const };
    if (sinceDeploy >= t.overlapWindowMs)
      return {
        kind: 'quiet',
        observed: old,
        view: {
          ...view,
          verdict:
            `the platform shows no last-use information: the overlap window of ` +
            `${t.overlapWindowMs} ms after deploy has passed`,
        },
      };
    return {
      kind: 'wait',
      view: {
        ...view,
        verdict:
          `the platform shows no last-use information: waiting the overlap window (${t.overlapWindowMs} ` +
          `ms after deploy) instead of a quiet check`,
      },
    };
  }

  if (memory.lastSeen?.value !== old.lastUsedAt) {
    memory.lastSeen = { value: old.lastUsedAt, firstSeenAtMs: nowMs };
    memory.lastSeenAfterMs = nowMs - t.pollIntervalMs;
  }
  const lateUseAt = lateUse(memory, old.lastUsedAt, t);
  const quietForMs = quietFor(memory, old.lastUsedAt, nowMs);
  const view = { ...base, method: 'last-use' as const, lateUseAt, quietForMs };

  if (lateUseAt) {
    return {
      kind: 'held',
      reason: 'used_after_allowance',
      view: {
        ...view,
        verdict: `the old key was used at ${lateUseAt}, after the propagation allowance: a consumer still holds it`,
      },
    };
  }
  if (sinceDeploy >= t.propagationAllowanceMs && quietForMs >= t.quietPeriodMs) {
    const verdict =
      old.lastUsedAt === null
        ? 'the old key was never used'
        : `no use for ${quietForMs} ms (quiet period ${t.quietPeriodMs} ms)`;
    return { kind: 'quiet', observed: old, view: { ...view, quietForMs: Math.min(quietForMs, sinceDeploy), verdict } };
  }
  if (sinceDeploy >= t.quietDeadlineMs) {
    return {
      kind: 'held',
      reason: 'deadline',
      view: { ...view, verdict: `the old key did not go quiet within ${t.quietDeadlineMs} ms of deploy` },
    };
  }
  return { kind: 'wait', view: { ...view, verdict: `waiting: quiet for ${quietForMs} of ${t.quietPeriodMs} ms` } };
}

/**
 * When a "wait" verdict could become another by time alone, its key's record unchanged (workflow clock): the end
 * of the overlap window; else the earlier of the deadline and the moment the key has been quiet for the quiet
 * period with the allowance over. What could end it sooner is a change in the record, which the watch returns.
 */
export function waitEndsAtMs(memory: GateMemory, method: QuietCheckView['method'], t: GateTimings): number {
  if (method === 'overlap-window') return memory.deployedAtMs + t.overlapWindowMs;
  const allowanceEndsMs = memory.deployedAtMs + t.propagationAllowanceMs;
  const deadlineMs = memory.deployedAtMs + t.quietDeadlineMs;
  const seen = memory.lastSeen;
  if (!seen || seen.value === null) return Math.min(allowanceEndsMs, deadlineMs);
  const before = memory.deployedAtPlatform
    ? Math.max(0, Date.parse(memory.deployedAtPlatform) - Date.parse(seen.value))
    : 0;
  const quietAtMs = seen.firstSeenAtMs + t.quietPeriodMs - before;
  // A time the platform wrote that does not parse never makes the key quiet (quietFor): only the deadline can.
  return Number.isFinite(quietAtMs) ? Math.min(Math.max(allowanceEndsMs, quietAtMs), deadlineMs) : deadlineMs;
}

/**
 * Up to when a watch (activities/keys/watch-key-usage.ts) may look without the workflow judging: `waitEndsAtMs`,
 * and while deploy time on the platform's clock is unknown, no later than its first look strictly after the
 * allowance's end if the workflow's previous look (`previousLookMs`) was not after it. A use first seen by a watch
 * is judged late or not by that previous look (lateUse: was the look before it after the allowance?), and this keeps
 * it on the same side of the allowance's end as every look of the watch: the verdict each look's own judgment would
 * have given. (A look exactly at the end is not after it: a slot's revoke, whose allowance is 0 and whose clock
 * starts at its first look, answers at its watch's first look once.)
 */
export function watchUntilMs(
  memory: GateMemory,
  method: QuietCheckView['method'],
  t: GateTimings,
  previousLookMs: number,
): number {
  const endsMs = waitEndsAtMs(memory, method, t);
  const allowanceEndsMs = memory.deployedAtMs + t.propagationAllowanceMs;
  return memory.deployedAtPlatform === null && previousLookMs <= allowanceEndsMs
    ? Math.min(endsMs, allowanceEndsMs + 1)
    : endsMs;
}

/** A use after deploy + allowance, on the platform's clock when we know its deploy time, else on ours. */
function lateUse(memory: GateMemory, lastUsedAt: string | null, t: GateTimings): string | null {
  if (!lastUsedAt) return null;
  if (memory.deployedAtPlatform) {
    return Date.parse(lastUsedAt) > Date.parse(memory.deployedAtPlatform) + t.propagationAllowanceMs
      ? lastUsedAt
      : null;
  }
  // The look before the one that first saw it came after the allowance ended: the use happened after it.
  // Judged with the interval of the look that saw it (kept in memory), so a later, longer poll cannot
  // change the verdict; with a fixed interval this is "first seen more than one poll after the allowance".
  const seenAt = memory.lastSeen?.firstSeenAtMs ?? 0;
  const after = memory.lastSeenAfterMs ?? seenAt - t.pollIntervalMs;
  return after > memory.deployedAtMs + t.propagationAllowanceMs ? lastUsedAt : null;
}

/**
 * How long the key has shown no use: time since its current last-use value was first seen, plus,
 * for a use before deploy, the platform-measured gap between that use and deploy.
 */
function quietFor(memory: GateMemory, lastUsedAt: string | null, nowMs: number): number {
  if (lastUsedAt === null) return Number.MAX_SAFE_INTEGER;
  const observed = nowMs - (memory.lastSeen?.firstSeenAtMs ?? nowMs);
  const before = memory.deployedAtPlatform
    ? Math.max(0, Date.parse(memory.deployedAtPlatform) - Date.parse(lastUsedAt))
    : 0;
  return observed + before;
}

/** A rotation's (or an adoption's) timings, in milliseconds for the gate. */
export function gateTimingsOf(t: Record<keyof typeof DEFAULT_TIMINGS, string | number>): GateTimings {
  return {
    quietPeriodMs: msOf(t.quietPeriod),
    propagationAllowanceMs: msOf(t.propagationAllowance),
    pollIntervalMs: msOf(t.pollInterval),
    quietDeadlineMs: msOf(t.quietDeadline),
    overlapWindowMs: msOf(t.overlapWindow),
  };
}

/** What the gate saw of a key, handed to the revoke, which re-reads it and refuses on any later use. */
export function expectationOf(observed: KeyUsage): LastUseExpectation {
  const lastUse =
    observed.lastUse ??
    (observed.lastUseKnown
      ? observed.lastUsedAt
        ? { state: 'seen' as const, at: observed.lastUsedAt, field: 'lastUsedAt' }
        : { state: 'never' as const, field: 'lastUsedAt' }
      : { state: 'unknown' as const, reason: 'not_shown' as const, candidates: [] });
  return { lastUse, useCount: observed.useCount ?? null };
}

/** The revoke refused because the key was used after the gate looked (KEY_IN_USE). */
export function isKeyInUseRefusal(error: unknown): boolean {
  return (
    error instanceof ActivityFailure &&
    error.cause instanceof ApplicationFailure &&
    error.cause.type === FailureCode.KEY_IN_USE
  );
}
