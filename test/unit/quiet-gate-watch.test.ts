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
import { evaluateGate, waitEndsAtMs, type GateMemory, type GateTimings } from '../../workflows/keys/quiet-gate.js';
import { Backoff } from '../../workflows/waits.js';
import { quietLogger } from '../harness/quiet-logger.js';

/**
 * The quiet gate's watch (QUIET_GATE_WATCH_PATCH), one attempt at a time as the server would run them: the attempt's
 * scheduled time and the heartbeat details the attempt before left are the activity's only memory. And the moment
 * a "wait" verdict can change by time alone, against the gate itself.
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
  previousLookMs: 1_000,
  firstLookMs: 2_000,
  untilMs: 100_000,
  delays: { baseMs: 500, ceilingMs: 4_000, polls: 12 },
};

/** One attempt, scheduled at `atMs`, after attempts that left `progress`; what it read and what it heartbeat. */
async function attempt(
  input: WatchKeyUsageInput,
  atMs: number,
  records: Record<string, KeyUsage | null>,
  progress?: { lookMs: number; looks: number },
) {
  const env = new MockActivityEnvironment(
    { currentAttemptScheduledTimestampMs: atMs, ...(progress ? { heartbeatDetails: progress } : {}) },
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
    const { error, reads, heartbeats } = await attempt(base, 1_200, unchanged);
    expect(reads).toBe(0);
    expect(heartbeats).toEqual([]);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({
      type: FailureCode.QUIET_GATE_WATCHING,
      nonRetryable: false,
      nextRetryDelay: 800,
      category: ApplicationFailureCategory.BENIGN,
    });
  });

  it('a look that sees nothing new leaves its time for the next and retries after the backoff', async () => {
    const first = await attempt(base, 2_000, unchanged);
    expect(first.reads).toBe(1);
    expect(first.heartbeats).toEqual([{ lookMs: 2_000, looks: 1 }]);
    // The gate's 13th poll interval: as the timers of a run without the watch would have waited.
    expect(first.error).toMatchObject({ nextRetryDelay: backoffDelayMs(500, 4_000, 13) });
    expect(backoffDelayMs(500, 4_000, 13)).toBe(new Backoff(500, 4_000, 12).next());
    const third = await attempt(base, 9_000, unchanged, { lookMs: 6_000, looks: 2 });
    expect(third.heartbeats).toEqual([{ lookMs: 9_000, looks: 3 }]);
    expect(third.error).toMatchObject({ nextRetryDelay: backoffDelayMs(500, 4_000, 15) });
  });

  it('returns a change with the look before it (from the attempt before), and how many looks it took', async () => {
    const moved = { old: usage('old', '2026-06-01T00:00:00.000Z'), new: usage('new', null) };
    const { value, heartbeats } = await attempt(base, 9_000, moved, { lookMs: 6_000, looks: 2 });
    expect(heartbeats).toEqual([]);
    expect(value).toEqual({ usage: moved, lookedAtMs: 9_000, previousLookMs: 6_000, looks: 3 });
    // At its first look, the look before is the workflow's.
    const first = await attempt(base, 2_000, moved);
    expect(first.value).toMatchObject({ lookedAtMs: 2_000, previousLookMs: 1_000, looks: 1 });
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
      const { value } = await attempt(base, 3_000, { old, new: usage('new', null) });
      expect(value?.usage.old).toEqual(old);
    }
  });

  it("the new key's use is a change only while the gate still wants its first use", async () => {
    const used = { old: usage('old', BEFORE), new: usage('new', '2026-11-29T10:00:00.000Z') };
    expect((await attempt(base, 3_000, used)).error?.type).toBe(FailureCode.QUIET_GATE_WATCHING);
    expect((await attempt({ ...base, freshNeeded: true }, 3_000, used)).value?.usage).toEqual(used);
    const unknown = { ...used, new: usage('new', null, { lastUseKnown: false }) };
    expect((await attempt({ ...base, freshNeeded: true }, 3_000, unknown)).error).toBeDefined();
  });

  it('waits no longer than until the verdict can change, and returns at that look whatever it sees', async () => {
    const input = { ...base, untilMs: 10_000, delays: { baseMs: 60_000, ceilingMs: 60_000, polls: 0 } };
    expect((await attempt(input, 2_000, unchanged)).error).toMatchObject({ nextRetryDelay: 8_000 });
    const { value } = await attempt(input, 10_004, unchanged, { lookMs: 2_000, looks: 1 });
    expect(value).toMatchObject({ lookedAtMs: 10_004, previousLookMs: 2_000, looks: 2 });
  });

  it('compares records as they crossed Temporal: an absent field and an undefined one are the same', async () => {
    const seen = { old: JSON.parse(JSON.stringify(usage('old', BEFORE, { useCount: undefined }))) as KeyUsage };
    const { error } = await attempt({ ...base, seen }, 3_000, unchanged);
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
  it.each(cases)('%s', (_name, make, old, fresh, fromMs) => {
    const m = make();
    const first = evaluateGate(m, old, fresh, fromMs, T);
    expect(first.kind).toBe('wait');
    const ends = waitEndsAtMs(m, first.view.method, T);
    expect(ends).toBe(firstNotWait(make, old, fresh, fromMs, 1));
  });
});
