import { describe, expect, it } from 'vitest';
import { compilePattern, FaultInjector } from '../../src/sim/faults.js';
import { stableStringify } from '../../src/sim/idempotency.js';
import { DEFAULT_SEED, parseSeed, SimSeedError } from '../../src/sim/seed.js';

describe('simulator seed validation', () => {
  it('accepts the default seed and fills optional limits with defaults', () => {
    expect(parseSeed(DEFAULT_SEED)).toEqual(DEFAULT_SEED);
    const minimal = parseSeed({ parents: DEFAULT_SEED.parents });
    expect(minimal).toMatchObject({
      tenantActiveKeyLimit: 3,
      idempotencyRetentionSeconds: 86_400,
      deliveryHistoryLimit: 20,
    });
  });

  it.each([
    [{ paidBalanceMicroUsd: 5 }, 'parents[0].paidBalanceMicroUsd'],
    [{ promoBalanceMicroUsd: '-1' }, 'parents[0].promoBalanceMicroUsd'],
    [{ platformKeys: ['sk_live_x'] }, 'parents[0].platformKeys[0]'],
    [{ personalTokens: ['svpk_sim_DO_NOT_USE_x'] }, 'parents[0].personalTokens[0]'],
    [{ activeKeyLimit: 0 }, 'parents[0].activeKeyLimit'],
    [{ typo: true }, 'parents[0]'],
  ])('names the bad field %j', (override, field) => {
    const seed = { ...DEFAULT_SEED, parents: [{ ...DEFAULT_SEED.parents[0], ...override }] };
    expect(() => parseSeed(seed)).toThrow(SimSeedError);
    expect(() => parseSeed(seed)).toThrow(field);
  });

  it('rejects duplicate parents and reused tokens', () => {
    const parent = DEFAULT_SEED.parents[0]!;
    expect(() => parseSeed({ ...DEFAULT_SEED, parents: [parent, parent] })).toThrow(/duplicate parent id/);
    expect(() => parseSeed({ ...DEFAULT_SEED, parents: [parent, { ...parent, id: 'p2' }] })).toThrow(
      /token used twice/,
    );
    expect(() => parseSeed({ ...DEFAULT_SEED, tenantActiveKeyLimit: 'three' })).toThrow('tenantActiveKeyLimit');
  });

  it('uses clearly fake fixture tokens in the default seed', () => {
    const tokens = DEFAULT_SEED.parents.flatMap((p) => [...p.platformKeys, ...p.personalTokens]);
    expect(tokens.every((t) => t.includes('DO_NOT_USE'))).toBe(true);
  });
});

describe('simulator fault path patterns', () => {
  it('matches * to exactly one segment and ** to any number', () => {
    const one = compilePattern('/subaccounts/*/wallet');
    expect(one.test('/subaccounts/sub_1/wallet')).toBe(true);
    expect(one.test('/subaccounts/sub_1/x/wallet')).toBe(false);
    expect(one.test('/subaccounts//wallet')).toBe(false);
    expect(compilePattern('projects/**').test('/projects/p/registry/webhooks')).toBe(true);
    expect(compilePattern('/a.b').test('/aXb')).toBe(false);
  });

  it('consumes count only when a rule applies', () => {
    const faults = new FaultInjector(() => 0);
    faults.setRules([
      {
        method: '*',
        path: '/x',
        mode: 'error-before-commit',
        probability: 1,
        count: 2,
        delayMs: 0,
        retryAfterSeconds: 1,
      },
    ]);
    expect(faults.plan('GET', '/y').terminal).toBeNull();
    expect(faults.plan('GET', '/x').terminal?.code).toBe('SERVICE_UNAVAILABLE');
    expect(faults.plan('POST', '/x').terminal).not.toBeNull();
    expect(faults.plan('GET', '/x').terminal).toBeNull();
  });
});

describe('simulator idempotency fingerprint', () => {
  it('treats objects with the same fields in another order as the same request', () => {
    expect(stableStringify({ a: 1, b: { d: [1, { y: 2, x: 1 }], c: 'x' } })).toBe(
      stableStringify({ b: { c: 'x', d: [1, { x: 1, y: 2 }] }, a: 1 }),
    );
    expect(stableStringify({ a: '1' })).not.toBe(stableStringify({ a: 1 }));
  });
});
