import { describe, expect, it } from 'vitest';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { evaluateGate, type GateMemory, type GateTimings } from '../../workflows/keys/quiet-gate.js';

// Deploy at 0 on our clock; the new key's first use (the platform's deploy time) at DEPLOYED.
const T: GateTimings = {
  quietPeriodMs: 1_000,
  propagationAllowanceMs: 1_000,
  pollIntervalMs: 100,
  quietDeadlineMs: 60_000,
  overlapWindowMs: 5_000,
};
const DEPLOYED = '2026-01-01T00:00:00.000Z';
const at = (offsetMs: number) => new Date(Date.parse(DEPLOYED) + offsetMs).toISOString();
const memory = (fields: Partial<GateMemory> = {}): GateMemory => ({
  deployedAtMs: 0,
  deployedAtPlatform: null,
  lastSeen: null,
  polls: 0,
  ...fields,
});
const oldKey = (fields: Partial<KeyUsage>): KeyUsage => ({
  keyId: 'old',
  status: 'active',
  lastUsedAt: null,
  lastUseKnown: true,
  ...fields,
});
const freshKey = (lastUsedAt: string | null): KeyUsage => ({
  keyId: 'new',
  status: 'active',
  lastUsedAt,
  lastUseKnown: true,
});

describe('the quiet gate', () => {
  it('reports the old key gone when the platform no longer lists it or shows it revoked', () => {
    expect(evaluateGate(memory(), null, null, 10, T)).toMatchObject({ kind: 'gone' });
    expect(evaluateGate(memory(), oldKey({ status: 'revoked' }), null, 10, T)).toMatchObject({ kind: 'gone' });
  });

  it('never passes a key that was never used before the propagation allowance is over', () => {
    const m = memory();
    expect(evaluateGate(m, oldKey({ lastUsedAt: null }), null, 999, T)).toMatchObject({ kind: 'wait' });
    const passed = evaluateGate(m, oldKey({ lastUsedAt: null }), null, 1_000, T);
    expect(passed).toMatchObject({ kind: 'quiet', observed: { keyId: 'old' } });
    expect(passed.view.verdict).toMatch(/never used/);
    expect(m.polls).toBe(2);
  });

  it('takes the platform deploy time from the new key once, and never moves it afterwards', () => {
    const m = memory();
    evaluateGate(m, oldKey({}), freshKey(DEPLOYED), 100, T);
    evaluateGate(m, oldKey({}), freshKey(at(5_000)), 200, T);
    expect(m.deployedAtPlatform).toBe(DEPLOYED);
  });

  it('waits out the quiet period after a recent use before deploy, counting the gap the platform measured', () => {
    // Used 200 ms before deploy (platform clock): quiet for 200 ms when first seen, then our clock adds.
    const m = memory();
    const old = oldKey({ lastUsedAt: at(-200) });
    const first = evaluateGate(m, old, freshKey(DEPLOYED), 1_000, T);
    expect(first).toMatchObject({ kind: 'wait', view: { method: 'last-use', quietForMs: 200 } });
    expect(evaluateGate(m, old, null, 1_799, T)).toMatchObject({ kind: 'wait' });
    expect(evaluateGate(m, old, null, 1_800, T)).toMatchObject({ kind: 'quiet', observed: old });
  });

  it('holds for an operator at once when the old key is used after the allowance (platform clock)', () => {
    const m = memory({ deployedAtPlatform: DEPLOYED });
    const decision = evaluateGate(m, oldKey({ lastUsedAt: at(1_001) }), null, 2_000, T);
    expect(decision).toMatchObject({ kind: 'held', reason: 'used_after_allowance', view: { lateUseAt: at(1_001) } });
  });

  it('accepts a use inside the allowance as a consumer switching over, and keeps waiting', () => {
    const m = memory({ deployedAtPlatform: DEPLOYED });
    expect(evaluateGate(m, oldKey({ lastUsedAt: at(1_000) }), null, 1_500, T)).toMatchObject({
      kind: 'wait',
      view: { lateUseAt: null },
    });
  });

  it(
    'without the platform deploy time, calls a new last-use value late only when ' +
      'first seen after allowance + one poll',
    () => {
      const early = memory();
      expect(evaluateGate(early, oldKey({ lastUsedAt: at(0) }), null, 1_100, T)).toMatchObject({ kind: 'wait' });
      const late = memory();
      expect(evaluateGate(late, oldKey({ lastUsedAt: at(0) }), null, 1_101, T)).toMatchObject({
        kind: 'held',
        reason: 'used_after_allowance',
      });
    },
  );

  it('holds at the deadline when the key never goes quiet for long enough', () => {
    const slow: GateTimings = { ...T, quietPeriodMs: 100_000 };
    const m = memory({ deployedAtPlatform: DEPLOYED });
    const old = oldKey({ lastUsedAt: at(500) });
    expect(evaluateGate(m, old, null, 59_999, slow)).toMatchObject({ kind: 'wait' });
    expect(evaluateGate(m, old, null, 60_000, slow)).toMatchObject({ kind: 'held', reason: 'deadline' });
  });

  it('restarts the quiet count when the last-use value moves', () => {
    const m = memory();
    evaluateGate(m, oldKey({ lastUsedAt: at(-5_000) }), null, 0, T);
    expect(m.lastSeen).toEqual({ value: at(-5_000), firstSeenAtMs: 0 });
    evaluateGate(m, oldKey({ lastUsedAt: at(-4_000) }), null, 900, T);
    expect(m.lastSeen).toEqual({ value: at(-4_000), firstSeenAtMs: 900 });
  });

  it('uses the overlap window when last use is not shown, passing exactly at its end', () => {
    const old = oldKey({ lastUseKnown: false });
    expect(evaluateGate(memory(), old, null, 4_999, T)).toMatchObject({
      kind: 'wait',
      view: { method: 'overlap-window' },
    });
    expect(evaluateGate(memory(), old, null, 5_000, T)).toMatchObject({
      kind: 'quiet',
      view: { method: 'overlap-window' },
    });
  });

  it('never takes unreadable last-use fields for "no use", even after the overlap window', () => {
    const old = oldKey({
      lastUseKnown: false,
      lastUse: { state: 'unknown', reason: 'unrecognised', candidates: ['usage.at'] },
    });
    expect(evaluateGate(memory(), old, null, 1_000_000, T)).toMatchObject({ kind: 'held', reason: 'last_use_unknown' });
  });
});
