import { describe, expect, it } from 'vitest';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { evaluateGate, type GateMemory, type GateTimings } from '../../workflows/keys/quiet-gate.js';

const T: GateTimings = {
  quietPeriodMs: 1_000,
  propagationAllowanceMs: 1_000,
  pollIntervalMs: 100,
  quietDeadlineMs: 60_000,
  overlapWindowMs: 5_000,
};
const memory = (): GateMemory => ({ deployedAtMs: 0, deployedAtPlatform: null, lastSeen: null, polls: 0 });
const key = (fields: Partial<KeyUsage>): KeyUsage => ({
  keyId: 'k',
  status: 'active',
  lastUsedAt: null,
  lastUseKnown: false,
  ...fields,
});

describe('the quiet gate with an explicit last-use reading', () => {
  it('holds at once when the record shows last use under fields it cannot read, never waiting out a window', () => {
    const old = key({ lastUse: { state: 'unknown', reason: 'unrecognised', candidates: ['activity.latest'] } });
    const decision = evaluateGate(memory(), old, null, 10_000, T);
    expect(decision).toMatchObject({ kind: 'held', reason: 'last_use_unknown', view: { method: 'unknown' } });
    expect(decision.view.verdict).toContain('activity.latest');
  });

  it('falls back to the overlap window only when nothing could be last use, and says so', () => {
    const old = key({ lastUse: { state: 'unknown', reason: 'not_shown', candidates: [] } });
    expect(evaluateGate(memory(), old, null, 1_000, T)).toMatchObject({
      kind: 'wait',
      view: { method: 'overlap-window' },
    });
    expect(evaluateGate(memory(), old, null, 6_000, T)).toMatchObject({
      kind: 'quiet',
      view: { method: 'overlap-window' },
      observed: old,
    });
  });

  it('hands the observation it passed on to the revoke', () => {
    const old = key({
      lastUseKnown: true,
      lastUsedAt: null,
      lastUse: { state: 'never', field: 'usage.lastUsedAt' },
      useCount: 0,
    });
    expect(evaluateGate(memory(), old, null, 2_000, T)).toMatchObject({ kind: 'quiet', observed: old });
  });

  it('behaves as before for readings recorded without `lastUse` (older histories)', () => {
    expect(evaluateGate(memory(), key({}), null, 6_000, T)).toMatchObject({
      kind: 'quiet',
      view: { method: 'overlap-window' },
    });
  });
});
