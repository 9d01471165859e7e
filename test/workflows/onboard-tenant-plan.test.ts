import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { onboardingWorkflowId } from '../../src/domain/ids.js';
import type { ResolvedPlan } from '../../src/domain/plans.js';
import type { OnboardTenantResult } from '../../workflows/onboard-tenant-messages.js';
import { fastWorld, uniqueId, until, type FastWorld } from '../harness/fast-workflow.js';

/**
 * onboardTenant by plan with mocked activities: the version the first step resolved is the one the run
 * carries out, across a continuation in the funding; the plan's funding is the onboarding's one transfer;
 * `default` (the onboarding's own key) is issued once and every other slot gets one issueTenantKey child;
 * the plan's last step runs once, after the tenant is active.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const PRO: ResolvedPlan = {
  name: 'pro',
  version: 3,
  body: { initialFundingMicroUsd: '3000000', keySlots: ['default', 'web', 'api'], rotation: { interval: '30d' } },
};

function byPlan() {
  const calls = { begin: 0, key: 0, active: 0, apply: [] as unknown[], slots: [] as string[], amounts: [] as string[] };
  const order: string[] = [];
  const state = { fundable: false };
  const validation = createInputValidationActivities();
  const activities = {
    beginOnboarding: async (request: { input: unknown; workflowType: string }) => {
      const input = await validation.validateWorkflowInput({
        schema: 'onboardTenant',
        input: request.input,
        workflowType: request.workflowType,
      });
      calls.begin += 1;
      // As the real step: the plan the input names, resolved here, its answer in history.
      expect(input.plan).toBe('pro');
      return { input, step: { subaccountId: 'sa_1', source: 'created' as const, requestId: null }, plan: PRO };
    },
    issueAndVerifyTenantKey: async (input: { slot: string }) => {
      calls.key += 1;
      expect(input.slot).toBe('default');
      return { state: 'issued' as const, keyId: 'key_1', fingerprint: 'fp_1', orphansRevoked: [], verified: true };
    },
    fundWallet: async (input: { amountMicroUsd: string }) => {
      calls.amounts.push(input.amountMicroUsd);
      return state.fundable
        ? { state: 'succeeded' as const, transferId: 'tr_1', resolution: null }
        : { state: 'insufficient_balance' as const, attempts: calls.amounts.length };
    },
    markTenantActive: async () => {
      calls.active += 1;
      order.push('active');
    },
    markOnboardingStopped: async () => undefined,
    consumeApproval: async () => ({ required: false }),
    // The issueTenantKey children: each slot answered as having its key.
    beginSlotKeyIssue: async (input: { slot: string }) => {
      calls.slots.push(input.slot);
      order.push(`key:${input.slot}`);
      return { state: 'exists' as const, generation: 1, keyId: `key_${input.slot}`, fingerprint: `fp_${input.slot}` };
    },
    applyOnboardingPlan: async (input: unknown) => {
      calls.apply.push(input);
      order.push('apply');
      return { schedules: ['rotation:x:default'], policySet: false, planChanged: true };
    },
  };
  return { calls, order, state, activities };
}

describe('onboardTenant by plan (mocked activities)', () => {
  it('carries the resolved version across a continuation and does the plan once, after the tenant is active', async () => {
    const ref = uniqueId('p');
    const o = byPlan();
    await world.run(o.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('onboardTenant', {
        taskQueue,
        workflowId: onboardingWorkflowId(ref),
        args: [
          {
            externalRef: ref,
            name: 'Plan Tenant',
            plan: 'pro',
            options: { balanceRetryInterval: '1ms', pollCeiling: '1ms', historyEventBound: 200 },
          },
        ],
      });
      // Held in the funding until the run has continued as new at least once.
      const first = client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId);
      await until(async () => {
        const { status } = await first.describe();
        if (status.name === 'FAILED') throw new Error('the first run failed');
        return status.name === 'CONTINUED_AS_NEW';
      });
      o.state.fundable = true;
      const result = (await handle.result()) as OnboardTenantResult;
      expect(result).toMatchObject({ status: 'active', keyId: 'key_1', funding: { transferId: 'tr_1' } });
      expect(result.plan).toEqual({
        name: 'pro',
        version: 3,
        keys: [
          { slot: 'web', keyId: 'key_web', fingerprint: 'fp_web', outcome: 'existing' },
          { slot: 'api', keyId: 'key_api', fingerprint: 'fp_api', outcome: 'existing' },
        ],
        schedules: ['rotation:x:default'],
        policySet: false,
      });
      // The plan's funding is the one amount sent; the first step and the default key once, across runs.
      expect(new Set(o.calls.amounts)).toEqual(new Set(['3000000']));
      expect(o.calls.begin).toBe(1);
      expect(o.calls.key).toBe(1);
      expect(o.calls.slots.sort()).toEqual(['api', 'web']);
      expect(o.calls.apply).toEqual([{ externalRef: ref, plan: PRO }]);
      expect(o.order[0]).toBe('active');
      expect(o.order.at(-1)).toBe('apply');
    });
  }, 240_000);
});
