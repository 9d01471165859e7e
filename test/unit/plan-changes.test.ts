import { describe, expect, it } from 'vitest';
import { noChanges, planChanges, planFundingKey, type TenantPlanState } from '../../src/domain/plan-rollout.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../src/domain/top-up-ids.js';
import type { PlanBody } from '../../src/domain/plans.js';

const rotation = { interval: '90d' };
const autoTopUp = { below: '1000000', to: '5000000', maxPerDay: '10000000' };
const v1: PlanBody = { keySlots: ['default', 'ci'], rotation, autoTopUp };
const starter1 = { name: 'starter', version: 1 };
const starter2 = { name: 'starter', version: 2 };

function onV1(over: Partial<TenantPlanState> = {}): TenantPlanState {
  return {
    from: starter1,
    fromBody: v1,
    activeSlots: ['default', 'ci'],
    policy: { ...autoTopUp, maxPerMonth: null },
    ...over,
  };
}

describe('planChanges: what moving a tenant onto a version does', () => {
  it('a new version that adds a slot and tightens rotation: the slot issued, every slot rescheduled, nothing retired', () => {
    const v2: PlanBody = { ...v1, keySlots: ['default', 'ci', 'prod'], rotation: { interval: '30d' } };
    const changes = planChanges(onV1(), starter2, v2);
    expect(changes).toEqual({
      slotsRetired: [],
      slotsAdded: ['prod'],
      fundingMicroUsd: null,
      schedulesSet: ['default', 'ci', 'prod'],
      schedulesRemoved: [],
      policy: 'unchanged',
    });
  });

  it('the same rotation: only the new slot gets a schedule', () => {
    const v2: PlanBody = { ...v1, keySlots: ['default', 'ci', 'prod'] };
    expect(planChanges(onV1(), starter2, v2).schedulesSet).toEqual(['prod']);
  });

  it('a downgrade retires only a slot the old version declared, with its schedule; never default', () => {
    const v2: PlanBody = { ...v1, keySlots: ['default'] };
    const changes = planChanges(onV1({ activeSlots: ['default', 'ci', 'ops'] }), starter2, v2);
    expect(changes.slotsRetired).toEqual(['ci']);
    expect(changes.schedulesRemoved).toEqual(['ci']);
    expect(changes.slotsAdded).toEqual([]);
  });

  it('a version without rotation removes every plan slot schedule; one with no rotation before removes none', () => {
    const { rotation: _r, ...noRotation } = v1;
    expect(planChanges(onV1(), starter2, noRotation).schedulesRemoved).toEqual(['default', 'ci']);
    const fromNone = planChanges(onV1({ fromBody: noRotation }), starter2, v1);
    expect(fromNone.schedulesRemoved).toEqual([]);
    expect(fromNone.schedulesSet).toEqual(['default', 'ci']);
  });

  it('a policy is set when it differs, and taken back only while it is still the old version`s', () => {
    const v2: PlanBody = { ...v1, autoTopUp: { ...autoTopUp, maxPerDay: '20000000' } };
    expect(planChanges(onV1(), starter2, v2).policy).toBe('set');
    const { autoTopUp: _a, ...noPolicy } = v1;
    expect(planChanges(onV1(), starter2, noPolicy).policy).toBe('removed');
    const operatorsOwn = { below: '1', to: '2', maxPerDay: '3', maxPerMonth: null };
    expect(planChanges(onV1({ policy: operatorsOwn }), starter2, noPolicy).policy).toBe('unchanged');
  });

  it('upgrade funding is sent when the tenant moves onto the version, never when it is on it already', () => {
    const v2: PlanBody = { ...v1, upgradeFundingMicroUsd: '2000000' };
    expect(planChanges(onV1(), starter2, v2).fundingMicroUsd).toBe('2000000');
    expect(planChanges(onV1({ from: starter2, fromBody: v2 }), starter2, v2).fundingMicroUsd).toBeNull();
  });

  it('a tenant on no plan: every plan slot missing is issued, nothing retired (its own slots are left alone)', () => {
    const changes = planChanges(
      { from: null, fromBody: null, activeSlots: ['default', 'legacy'], policy: null },
      starter1,
      v1,
    );
    expect(changes.slotsAdded).toEqual(['ci']);
    expect(changes.slotsRetired).toEqual([]);
    expect(changes.policy).toBe('set');
  });

  it('a tenant that matches its version has no changes', () => {
    expect(noChanges(planChanges(onV1(), starter1, v1))).toBe(true);
    expect(noChanges(planChanges(onV1({ activeSlots: ['default'] }), starter1, v1))).toBe(false);
  });

  it('the upgrade funding key is one per plan version and a valid caller key', () => {
    expect(planFundingKey({ name: 'pro:eu', version: 3 })).toBe('plan.pro_ceu.v3');
    expect(planFundingKey({ name: 'pro_eu', version: 3 })).toBe('plan.pro__eu.v3');
    expect(planFundingKey({ name: 'pro_ceu', version: 3 })).toBe('plan.pro__ceu.v3');
    expect(IDEMPOTENCY_KEY_PATTERN.test(planFundingKey({ name: 'pro:eu', version: 3 }))).toBe(true);
    expect(planFundingKey(starter1)).not.toBe(planFundingKey(starter2));
  });
});
