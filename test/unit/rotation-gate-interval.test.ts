import { describe, expect, it } from 'vitest';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { evaluateGate, type GateMemory, type GateTimings } from '../../workflows/keys/quiet-gate.js';

/**
 * A late use is judged by the interval the caller actually waited before the look that first saw it (polls back
 * off), and that verdict is kept: a later, longer or shorter poll cannot change it.
 */
const T: GateTimings = {
  quietPeriodMs: 10_000,
  propagationAllowanceMs: 1_000,
  pollIntervalMs: 100,
  quietDeadlineMs: 600_000,
  overlapWindowMs: 600_000,
};
const memory = (): GateMemory => ({ deployedAtMs: 0, deployedAtPlatform: null, lastSeen: null, polls: 0 });
const used = (lastUsedAt: string): KeyUsage => ({ keyId: 'old', status: 'active', lastUsedAt, lastUseKnown: true });
const A = '2026-01-01T00:00:00.000Z';
const B = '2026-01-01T00:00:01.000Z';
/** A look at `nowMs`, `sinceLastMs` after the previous one began. */
const look = (m: GateMemory, key: KeyUsage, nowMs: number, sinceLastMs: number) =>
  evaluateGate(m, key, null, nowMs, { ...T, pollIntervalMs: sinceLastMs });

describe('the quiet gate with backed-off polls', () => {
  it('does not take a use for late when the look before it was inside the allowance, however long the gap', () => {
    const m = memory();
    expect(look(m, used(A), 900, 900).kind).toBe('wait');
    // Next look 1.5 s later (backed off): the new use may have been at 901 ms, inside the allowance.
    expect(look(m, used(B), 2_400, 1_500)).toMatchObject({ kind: 'wait', view: { lateUseAt: null } });
    // A later look with a short interval does not turn the same use late.
    expect(look(m, used(B), 2_450, 50)).toMatchObject({ kind: 'wait', view: { lateUseAt: null } });
  });

  it('holds when the look before the use began after the allowance, whatever the interval', () => {
    const m = memory();
    look(m, used(A), 900, 900);
    look(m, used(A), 1_200, 300);
    expect(look(m, used(B), 3_000, 1_800)).toMatchObject({
      kind: 'held',
      reason: 'used_after_allowance',
      view: { lateUseAt: B },
    });
  });

  it('judges as before when the interval never changes (callers with a fixed poll)', () => {
    const m = memory();
    look(m, used(A), 100, 100);
    // First seen 1 100 ms after deploy: not more than one poll after the allowance ended.
    expect(look(m, used(B), 1_100, 100).kind).toBe('wait');
    const n = memory();
    look(n, used(A), 1_000, 100);
    expect(look(n, used(B), 1_101, 100).kind).toBe('held');
  });
});
