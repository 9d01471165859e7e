import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import {
  watchThenObserve,
  type WatchKeyUsageInput,
  type WatchKeyUsageResult,
} from '../../activities/keys/watch-key-usage.js';
import { FailureCode } from '../../src/domain/failures.js';
import { backoffDelayMs } from '../../src/domain/poll-backoff.js';
import {
  evaluateGate,
  waitEndsAtMs,
  watchUntilMs,
  type GateMemory,
  type GateTimings,
} from '../../workflows/keys/quiet-gate.js';
import { Backoff } from '../../workflows/waits.js';
import { quietLogger } from '../harness/quiet-logger.js';

/**
 * The quiet gate's watch (QUIET_GATE_WATCH_PATCH), one attempt at a time as the server would run them: the attempt's
 * number and scheduled times are the activity's only memory (no heartbeat). And the moment a "wait" verdict can
 * change by time alone, against the gate itself; and the gate judged only where a watch answers, against the gate
 * judging every look.
 */
const usage = (keyId: string, lastUsedAt: string | null, fields: Partial<KeyUsage> = {}): KeyUsage => ({
  keyId,
  status: 'active',
  lastUsedAt,
  lastUseKnown: true,
  ...fields,
});
const BEFORE = '2026-01-01T00:00:00.000Z';
const base: WatchKeyUsageInput = {
  subaccountId: 'sa_1',
  keyIds: ['old'],
  newKeyId: 'new',
  freshNeeded: false,
  seen: { old: usage('old', BEFORE) },
  firstLookMs: 2_000,
  untilMs: 100_000,
  delays: { baseMs: 500, ceilingMs: 4_000, polls: 12 },
};

/**
 * Attempt `n` of a watch scheduled at `scheduledMs` (default: as its first look was due), this attempt scheduled at
 * `atMs`: what it read, and what it answered or asked.
 */
async function attempt(
  input: WatchKeyUsageInput,
  { n, atMs, scheduledMs = input.firstLookMs }: { n: number; atMs: number; scheduledMs?: number },
  records: Record<string, KeyUsage | null>,
) {
  const env = new MockActivityEnvironment(
    { attempt: n, scheduledTimestampMs: scheduledMs, currentAttemptScheduledTimestampMs: atMs },
    { logger: quietLogger() },
  );
  const heartbeats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => heartbeats.push(d));
  let reads = 0;
  const watch = watchThenObserve(async ({ keyIds }) => {
    reads += 1;
    return Object.fromEntries(keyIds.map((id) => [id, records[id] ?? null]));
  });
  const outcome: { value?: WatchKeyUsageResult; error?: ApplicationFailure } = await env.run(watch, input).then(
    (value) => ({ value: value as WatchKeyUsageResult }),
    (error: unknown) => ({ error: error as ApplicationFailure }),
  );
  return { ...outcome, heartbeats, reads };
}

const unchanged = { old: usage('old', BEFORE), new: usage('new', null) };

describe('the quiet gate watch, attempt by attempt', () => {
  it('reads nothing before its first look is due, and retries at that moment', async () => {
    const { error, reads } = await attempt(base, { n: 1, atMs: 1_200, scheduledMs: 1_200 }, unchanged);
    expect(reads).toBe(0);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({
      type: FailureCode.QUIET_GATE_WATCHING,
      nonRetryable: false,
      nextRetryDelay: 800,
      category: ApplicationFailureCategory.BENIGN,
    });
  });

  it('a look that sees nothing new retries after the backoff, keeping nothing (no heartbeat)', async () => {
    const first = await attempt(base, { n: 1, atMs: 2_000 }, unchanged);
    expect(first.reads).toBe(1);
    expect(first.heartbeats).toEqual([]);
    // The gate's 13th poll interval: as the timers of a run without the watch would have waited.
    expect(first.error).toMatchObject({ nextRetryDelay: backoffDelayMs(500, 4_000, 13) });
    expect(backoffDelayMs(500, 4_000, 13)).toBe(new Backoff(500, 4_000, 12).next());
    // Its third look (the first attempt waited for the first look): the 15th interval.
    const third = await attempt(base, { n: 4, atMs: 9_000, scheduledMs: 1_200 }, unchanged);
    expect(third.error).toMatchObject({ nextRetryDelay: backoffDelayMs(500, 4_000, 15) });
    expect(third.heartbeats).toEqual([]);
  });

  it('returns a change with its look time and how many looks it took', async () => {
    const moved = { old: usage('old', '2026-06-01T00:00:00.000Z'), new: usage('new', null) };
    const { value } = await attempt(base, { n: 4, atMs: 9_000, scheduledMs: 1_200 }, moved);
    expect(value).toEqual({ usage: moved, lookedAtMs: 9_000, looks: 3 });
    const first = await attempt(base, { n: 1, atMs: 2_000 }, moved);
    expect(first.value).toEqual({ usage: moved, lookedAtMs: 2_000, looks: 1 });
  });

  it('takes any change of an old key for a change: status, last-use reading, use count, gone', async () => {
    const changes: Array<KeyUsage | null> = [
      usage('old', BEFORE, { status: 'revoked' }),
      usage('old', BEFORE, { useCount: 3 }),
      usage('old', BEFORE, { lastUseKnown: false }),
      usage('old', BEFORE, { lastUse: { state: 'unknown', reason: 'unrecognised', candidates: ['x'] } }),
      null,
    ];
    for (const old of changes) {
      const { value } = await attempt(base, { n: 2, atMs: 3_000 }, { old, new: usage('new', null) });
      expect(value?.usage.old).toEqual(old);
    }
  });

  it("the new key's use is a change only while the gate still wants its first use", async () => {
    const used = { old: usage('old', BEFORE), new: usage('new', '2026-11-29T10:00:00.000Z') };
    const at = { n: 2, atMs: 3_000 };
    expect((await attempt(base, at, used)).error?.type).toBe(FailureCode.QUIET_GATE_WATCHING);
    expect((await attempt({ ...base, freshNeeded: true }, at, used)).value?.usage).toEqual(used);
    const unknown = { ...used, new: usage('new', null, { lastUseKnown: false }) };
    expect((await attempt({ ...base, freshNeeded: true }, at, unknown)).error).toBeDefined();
    // A slot's revoke has no new key: it reads the old keys only.
    const { reads, error } = await attempt({ ...base, newKeyId: undefined as never }, at, unchanged);
    expect([reads, error?.type]).toEqual([1, FailureCode.QUIET_GATE_WATCHING]);
  });

  it('waits no longer than until the verdict can change, and returns at that look whatever it sees', async () => {
    const input = { ...base, untilMs: 10_000, delays: { baseMs: 60_000, ceilingMs: 60_000, polls: 0 } };
    expect((await attempt(input, { n: 1, atMs: 2_000 }, unchanged)).error).toMatchObject({ nextRetryDelay: 8_000 });
    const { value } = await attempt(input, { n: 2, atMs: 10_004 }, unchanged);
    expect(value).toMatchObject({ lookedAtMs: 10_004, looks: 2 });
  });

  it('compares records as they crossed Temporal: an absent field and an undefined one are the same', async () => {
    const seen = { old: JSON.parse(JSON.stringify(usage('old', BEFORE, { useCount: undefined }))) as KeyUsage };
    const { error } = await attempt({ ...base, seen }, { n: 2, atMs: 3_000 }, unchanged);
    expect(error?.type).toBe(FailureCode.QUIET_GATE_WATCHING);
  });
});

const T: GateTimings = {
  quietPeriodMs: 10_000,
  propagationAllowanceMs: 4_000,
  pollIntervalMs: 100,
  quietDeadlineMs: 60_000,
  overlapWindowMs: 20_000,
};

/** The first moment from `fromMs` (in steps of `stepMs`) at which the gate's verdict is no longer "wait". */
function firstNotWait(
  make: () => GateMemory,
  old: KeyUsage,
  fresh: KeyUsage | null,
  fromMs: number,
  stepMs = 1,
): number | null {
  for (let at = fromMs; at <= 100_000; at += stepMs) {
    const memory = make();
    // The look that set the memory, then this one with the same record.
    evaluateGate(memory, old, fresh, fromMs, T);
    if (evaluateGate(memory, old, fresh, at, T).kind !== 'wait') return at;
  }
  return null;
}

describe('when a "wait" verdict can change by time alone (waitEndsAtMs)', () => {
  const memory = (): GateMemory => ({ deployedAtMs: 1_000, deployedAtPlatform: null, lastSeen: null, polls: 0 });
  const cases: Array<[string, () => GateMemory, KeyUsage, KeyUsage | null, number]> = [
    ['a key never used: the allowance', memory, usage('old', null), null, 2_000],
    ['a use before deploy, first seen at 3 s: the quiet period from then', memory, usage('old', BEFORE), null, 3_000],
    [
      'first seen late in the gate: the deadline first',
      () => ({ ...memory(), deployedAtPlatform: '2026-11-29T10:00:01.000Z' }),
      usage('old', '2026-11-29T10:00:00.000Z'),
      null,
      55_000,
    ],
    [
      'a use 3 s before deploy on the platform clock: that much sooner',
      () => ({ ...memory(), deployedAtPlatform: '2026-11-29T10:00:03.000Z' }),
      usage('old', '2026-11-29T10:00:00.000Z'),
      null,
      2_000,
    ],
    ['no last use shown: the overlap window', memory, usage('old', null, { lastUseKnown: false }), null, 2_000],
  ];
  it('a last use that does not parse, beside deploy time on the platform clock: only the deadline', () => {
    const make = () => ({ ...memory(), deployedAtPlatform: '2026-11-29T10:00:03.000Z' });
    const m = make();
    const first = evaluateGate(m, usage('old', 'yesterday'), null, 2_000, T);
    expect(first.kind).toBe('wait');
    expect(waitEndsAtMs(m, first.view.method, T)).toBe(61_000);
    expect(firstNotWait(make, usage('old', 'yesterday'), null, 2_000, 100)).toBe(61_000);
  });

  it.each(cases)('%s', (_name, make, old, fresh, fromMs) => {
    const m = make();
    const first = evaluateGate(m, old, fresh, fromMs, T);
    expect(first.kind).toBe('wait');
    const ends = waitEndsAtMs(m, first.view.method, T);
    expect(ends).toBe(firstNotWait(make, old, fresh, fromMs, 1));
  });
});

describe('judged only where the watch answers, the gate decides as when it judged every look (watchUntilMs)', () => {
  const LOOK = 400;
  /** From look `usedAt` on, the record shows a use (null: never). */
  const recordAt = (i: number, usedAt: number | null) =>
    usage('old', usedAt !== null && i >= usedAt ? `2026-11-29T10:00:${String(usedAt % 60).padStart(2, '0')}Z` : BEFORE);
  type Decided = { kind: string; reason: string | null; at: number };
  const decided = (d: ReturnType<typeof evaluateGate>, at: number): Decided | null =>
    d.kind === 'wait' ? null : { kind: d.kind, reason: 'reason' in d ? d.reason : null, at };

  /**
   * Looks every 400 ms from 0, the gate's clock from `deployedAtMs` (a slot's revoke: 0, its first look, and no
   * allowance); judged at every look, or only at a watch's answers (`watch`).
   */
  function gate(timings: GateTimings, usedAt: number | null, watch: boolean): Decided {
    const memory: GateMemory = { deployedAtMs: 0, deployedAtPlatform: null, lastSeen: null, polls: 0 };
    let previous = 0;
    let i = 0;
    for (;;) {
      const at = i * LOOK;
      const seen = recordAt(i, usedAt);
      const d = evaluateGate(memory, seen, null, at, { ...timings, pollIntervalMs: at - previous });
      previous = at;
      const done = decided(d, at);
      if (done) return done;
      if (!watch) i += 1;
      else {
        // The watch: looks until the record changes or its first look at or after its bound.
        const until = watchUntilMs(memory, d.view.method, timings, previous);
        do i += 1;
        while (i * LOOK < until && JSON.stringify(recordAt(i, usedAt)) === JSON.stringify(seen));
      }
    }
  }

  const shapes: Array<[string, GateTimings]> = [
    ['a rotation: allowance 4 s, a look on its end', { ...T, propagationAllowanceMs: 4_000 }],
    ['a rotation: allowance 4.1 s, no look on its end', { ...T, propagationAllowanceMs: 4_100 }],
    ['a slot revoke: no allowance, its clock from its first look', { ...T, propagationAllowanceMs: 0 }],
  ];
  describe.each(shapes)('%s', (_name, timings) => {
    it.each([null, 1, 2, 3, 5, 9, 10, 11, 12, 15, 20, 40, 90, 149])('a use first shown at look %s', (usedAt) => {
      expect(gate(timings, usedAt, true)).toEqual(gate(timings, usedAt, false));
    });
  });

  it('is the verdict bound, or just after the allowance end while the previous look was not after it', () => {
    const timings = { ...T, propagationAllowanceMs: 4_000 };
    const m: GateMemory = {
      deployedAtMs: 0,
      deployedAtPlatform: null,
      lastSeen: { value: BEFORE, firstSeenAtMs: 0 },
      polls: 0,
    };
    expect(watchUntilMs(m, 'last-use', timings, 0)).toBe(4_001);
    expect(watchUntilMs(m, 'last-use', timings, 4_000)).toBe(4_001);
    expect(watchUntilMs(m, 'last-use', timings, 4_200)).toBe(waitEndsAtMs(m, 'last-use', timings));
    const onPlatformClock = { ...m, deployedAtPlatform: '2026-11-29T10:00:00.000Z' };
    expect(watchUntilMs(onPlatformClock, 'last-use', timings, 0)).toBe(
      waitEndsAtMs(onPlatformClock, 'last-use', timings),
    );
  });
});
