import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planConvergenceWorkflowId, planRolloutWorkflowId } from '../../src/domain/ids.js';
import type { PlanChanges } from '../../src/domain/plan-rollout.js';
import {
  pauseRolloutUpdate,
  resumeRolloutUpdate,
  rolloutStatusQuery,
  type ConvergeTenantPlanResult,
  type RolloutResult,
} from '../../workflows/plan-rollout-messages.js';
import {
  answerOf,
  decide,
  fastWorld,
  uniqueId,
  until,
  waitForStage,
  type FastWorld,
} from '../harness/fast-workflow.js';

/**
 * Plan convergence with mocked activities (issue 33): one tenant's convergence retires before it issues and
 * holds the tenant, with nothing of the version applied, when a retired slot's key is in use; issues each new
 * slot once and sends the upgrade funding under the version's key; a repeat finds the tenant up to date. The
 * rollout converges every tenant of the plan page by page (continue-as-new), never more than its concurrency
 * at once; a pause stops it starting tenants and is a visible wait that only resume ends; held and skipped
 * tenants are counted and named while the others finish.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const V2 = { name: 'pro', version: 2 };
const by = { operator: 'alice', reason: 'checking the canary tenants' };
const FAST_GATE = { quietPeriod: '50ms', pollInterval: '10ms', quietDeadline: '5s', overlapWindow: '50ms' };

function changes(over: Partial<PlanChanges> = {}): PlanChanges {
  return {
    slotsRetired: [],
    slotsAdded: [],
    fundingMicroUsd: null,
    schedulesSet: ['default'],
    schedulesRemoved: [],
    policy: 'unchanged',
    ...over,
  };
}

/** Our records and the platform behind the mocks: which slots hold keys, which keys are in use, what was applied. */
function world1(plans: Record<string, PlanChanges | 'inactive'>) {
  const calls = {
    read: [] as string[],
    issued: [] as string[],
    issuedAt: [] as number[],
    revoked: [] as string[],
    topUps: [] as Array<{ externalRef: string; idempotencyKey: string; amount: string }>,
    applied: [] as Array<{ externalRef: string; changes: PlanChanges; requestedBy: string }>,
    running: 0,
    maxRunning: 0,
  };
  const inUse = new Set<string>();
  const gate = { open: true };
  const converged = new Set<string>();
  const refs = Object.keys(plans).sort();
  const activities = {
    listPlanRolloutPage: async (page: { after: string | null; limit: number }) => ({
      refs: refs.filter((ref) => (page.after === null || ref > page.after) && !converged.has(ref)).slice(0, page.limit),
      requestsPerSecond: 1000,
    }),
    readPlanConvergence: async (input: { externalRef: string }) => {
      calls.read.push(input.externalRef);
      const plan = plans[input.externalRef]!;
      if (plan === 'inactive') return { outcome: 'not_active', reason: `tenant ${input.externalRef} is suspended` };
      return {
        outcome: 'ready',
        from: { name: 'pro', version: 1 },
        changes: plan,
        upToDate: converged.has(input.externalRef),
      };
    },
    // revokeTenantKeySlot's children: the slot's key, its use as the platform reports it, the revoke.
    findSlotKeyToRevoke: async (input: { externalRef: string; slot: string }) => ({
      subaccountId: `sa_${input.externalRef}`,
      generation: 1,
      keyId: `key_${input.externalRef}_${input.slot}`,
      fingerprint: 'fp',
    }),
    observeKeyUsage: async (input: { keyIds: string[] }) => {
      const keyId = input.keyIds[0]!;
      const used = [...inUse].some((ref) => keyId.startsWith(`key_${ref}_`));
      return {
        [keyId]: {
          keyId,
          status: 'active',
          lastUsedAt: used ? new Date().toISOString() : '2026-01-01T00:00:00.000Z',
          lastUseKnown: true,
        },
      };
    },
    revokeSlotKey: async (input: { externalRef: string; slot: string }) => {
      const keyId = `key_${input.externalRef}_${input.slot}`;
      calls.revoked.push(keyId);
      return { keyId, result: 'revoked' as const };
    },
    // issueTenantKey's children: the slot answered as having its key.
    beginSlotKeyIssue: async (input: { externalRef: string; slot: string }) => {
      calls.issued.push(`${input.externalRef}:${input.slot}`);
      calls.issuedAt.push(Date.now());
      return { state: 'exists' as const, generation: 1, keyId: `key_${input.slot}`, fingerprint: `fp_${input.slot}` };
    },
    // fundTenant's children: the top-up recorded under its key and applied once.
    recordTopUp: async (input: { externalRef: string; idempotencyKey: string; amountMicroUsd: string }) => {
      calls.topUps.push({
        externalRef: input.externalRef,
        idempotencyKey: input.idempotencyKey,
        amount: input.amountMicroUsd,
      });
      return {
        state: 'recorded' as const,
        subaccountId: 'sa_1',
        purpose: `top-up:${input.idempotencyKey}`,
        intentState: 'pending',
        kind: 'top-up',
        requestedBy: 'alice',
      };
    },
    fundWallet: async () => ({ state: 'succeeded' as const, transferId: 'tr_1', resolution: null }),
    consumeApproval: async () => ({ required: false }),
    applyPlanVersion: async (input: { externalRef: string; changes: PlanChanges; requestedBy: string }) => {
      calls.running += 1;
      calls.maxRunning = Math.max(calls.maxRunning, calls.running);
      await until(() => gate.open);
      calls.running -= 1;
      calls.applied.push(input);
      converged.add(input.externalRef);
      return { schedules: input.changes.schedulesSet, schedulesRemoved: [], policy: 'unchanged', planChanged: true };
    },
  };
  return { calls, inUse, gate, activities };
}

describe('convergeTenantPlan (mocked activities)', () => {
  it('issues each new slot, sends the upgrade funding once under the version`s key, applies the version; a repeat is unchanged', async () => {
    const ref = uniqueId('c');
    const w = world1({ [ref]: changes({ slotsAdded: ['prod'], fundingMicroUsd: '2000000' }) });
    await world.run(w.activities, async ({ client, taskQueue }) => {
      const start = () =>
        client.workflow.execute('convergeTenantPlan', {
          taskQueue,
          workflowId: planConvergenceWorkflowId(ref),
          args: [{ externalRef: ref, plan: 'pro', version: 2, requestedBy: 'alice' }],
        }) as Promise<ConvergeTenantPlanResult>;
      const result = await start();
      expect(result).toMatchObject({
        outcome: 'converged',
        keys: [{ slot: 'prod', keyId: 'key_prod', outcome: 'existing' }],
        funding: { idempotencyKey: 'plan.pro.v2', state: 'succeeded' },
        retired: [],
        reason: null,
      });
      expect(w.calls.issued).toEqual([`${ref}:prod`]);
      expect(w.calls.topUps).toEqual([{ externalRef: ref, idempotencyKey: 'plan.pro.v2', amount: '2000000' }]);
      expect(w.calls.applied).toHaveLength(1);
      expect(w.calls.applied[0]).toMatchObject({ externalRef: ref, requestedBy: 'alice' });

      // Run again: the tenant is on the version with everything it says; nothing is issued, sent or applied.
      expect((await start()).outcome).toBe('unchanged');
      expect(w.calls.issued).toHaveLength(1);
      expect(w.calls.topUps).toHaveLength(1);
      expect(w.calls.applied).toHaveLength(1);
    });
  });

  it('holds a tenant whose retired slot`s key is in use: no revoke, no issue, no funding, nothing applied', async () => {
    const ref = uniqueId('h');
    const w = world1({ [ref]: changes({ slotsRetired: ['ci'], slotsAdded: ['prod'], fundingMicroUsd: '1' }) });
    w.inUse.add(ref);
    await world.run(w.activities, async ({ client, taskQueue }) => {
      const result = (await client.workflow.execute('convergeTenantPlan', {
        taskQueue,
        workflowId: planConvergenceWorkflowId(ref),
        args: [{ externalRef: ref, plan: 'pro', version: 2, requestedBy: 'alice', options: FAST_GATE }],
      })) as ConvergeTenantPlanResult;
      expect(result.outcome).toBe('held');
      expect(result.reason).toContain(`slot ci: its key key_${ref}_ci was not revoked`);
      expect(result.reason).toContain('stays on pro@1');
      expect(w.calls.revoked).toEqual([]);
      expect(w.calls.issued).toEqual([]);
      expect(w.calls.topUps).toEqual([]);
      expect(w.calls.applied).toEqual([]);
    });
  });

  it('retires a quiet slot`s key through the gate, then goes on', async () => {
    const ref = uniqueId('r');
    const w = world1({ [ref]: changes({ slotsRetired: ['ci'], schedulesRemoved: ['ci'] }) });
    await world.run(w.activities, async ({ client, taskQueue }) => {
      const result = (await client.workflow.execute('convergeTenantPlan', {
        taskQueue,
        workflowId: planConvergenceWorkflowId(ref),
        args: [{ externalRef: ref, plan: 'pro', version: 2, requestedBy: 'alice', options: FAST_GATE }],
      })) as ConvergeTenantPlanResult;
      expect(result.outcome).toBe('converged');
      expect(result.retired).toEqual([{ slot: 'ci', keyId: `key_${ref}_ci` }]);
      expect(w.calls.revoked).toEqual([`key_${ref}_ci`]);
      expect(w.calls.applied).toHaveLength(1);
    });
  });
});

describe('rolloutPlan (mocked activities)', () => {
  it('converges page by page within its concurrency, pauses visibly, resumes, and names held and skipped tenants', async () => {
    const p = uniqueId('t');
    const refs = Array.from({ length: 7 }, (_, i) => `${p}-${i}`);
    const plans: Record<string, PlanChanges | 'inactive'> = Object.fromEntries(refs.map((ref) => [ref, changes()]));
    plans[refs[2]!] = 'inactive';
    plans[refs[4]!] = changes({ slotsRetired: ['ci'] });
    const w = world1(plans);
    w.inUse.add(refs[4]!);
    w.gate.open = false;
    await world.run(w.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rolloutPlan', {
        taskQueue,
        workflowId: planRolloutWorkflowId(V2),
        args: [{ plan: 'pro', version: 2, requestedBy: 'alice', concurrency: 2, pageSize: 3, options: FAST_GATE }],
      });
      // Two tenants held in their last step: the concurrency bound, not a third.
      await until(() => w.calls.running === 2);
      const paused = await decide(handle, pauseRolloutUpdate, by);
      expect(paused.effect).toContain('no tenant is started until it is resumed');
      const wait = await waitForStage(handle, 'paused');
      expect(wait.waitingFor).toContain('paused by alice: checking the canary tenants');
      expect(wait.decisions).toEqual(['resumeRollout']);
      // A second pause does not apply: refused by the validator with the reason, nothing recorded.
      await expect(decide(handle, pauseRolloutUpdate, by)).rejects.toThrow(WorkflowUpdateFailedError);
      w.gate.open = true;
      await until(() => w.calls.applied.length === 2);
      await new Promise((r) => setTimeout(r, 300));
      // Read by the rollout (to pace it) and by each of the two children: nobody else was started.
      expect(w.calls.read).toHaveLength(4);
      const status = await answerOf(handle, rolloutStatusQuery);
      expect(status).toMatchObject({ stage: 'paused', running: 0, paused: { by: 'alice' } });

      await decide(handle, resumeRolloutUpdate, by);
      const result = (await handle.result()) as RolloutResult;
      // The inactive tenant is skipped by the rollout's own read: no run started for it.
      expect(result.totals).toEqual({ started: 6, converged: 5, unchanged: 0, held: 1, skipped: 1, failed: 0 });
      expect(result.held).toEqual([expect.objectContaining({ externalRef: refs[4] })]);
      expect(result.held[0]!.reason).toContain('slot ci');
      expect(w.calls.maxRunning).toBeLessThanOrEqual(2);
      // Each converged tenant's version applied once; the held and the inactive ones never.
      expect(w.calls.applied.map((a) => a.externalRef).sort()).toEqual(
        refs.filter((_, i) => i !== 2 && i !== 4).sort(),
      );
      // Page by page: the first run continued as new.
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
    });
  });

  it('carries a pause across a page: the next run waits for resume before it starts a tenant', async () => {
    const p = uniqueId('q');
    const refs = Array.from({ length: 4 }, (_, i) => `${p}-${i}`);
    const w = world1(Object.fromEntries(refs.map((ref) => [ref, changes()])));
    w.gate.open = false;
    await world.run(w.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rolloutPlan', {
        taskQueue,
        workflowId: planRolloutWorkflowId({ name: p, version: 1 }),
        args: [{ plan: p, version: 1, requestedBy: 'alice', concurrency: 2, pageSize: 2 }],
      });
      await until(() => w.calls.running === 2);
      await decide(handle, pauseRolloutUpdate, by);
      w.gate.open = true;
      // The page ends while paused; the next run carries the pause and starts nobody.
      await until(async () => {
        const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
        return first.status.name === 'CONTINUED_AS_NEW';
      });
      const wait = await waitForStage(handle, 'paused');
      expect(wait.decisions).toEqual(['resumeRollout']);
      await new Promise((r) => setTimeout(r, 300));
      expect(w.calls.read).toHaveLength(4);
      await decide(handle, resumeRolloutUpdate, by);
      const result = (await handle.result()) as RolloutResult;
      expect(result.totals.converged).toBe(4);
      expect(w.calls.applied).toHaveLength(4);
    });
  });

  it('keeps no more tenants in flight than its share of a second`s platform requests', async () => {
    const p = uniqueId('r');
    const refs = Array.from({ length: 9 }, (_, i) => `${p}-${i}`);
    const w = world1(Object.fromEntries(refs.map((ref) => [ref, changes({ slotsAdded: ['prod'] })])));
    w.gate.open = false;
    await world.run(w.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rolloutPlan', {
        taskQueue,
        workflowId: planRolloutWorkflowId({ name: p, version: 1 }),
        // 5 requests/s, 80% of it in flight: 4 tenants, though 9 are allowed.
        args: [{ plan: p, version: 1, requestedBy: 'alice', concurrency: 9, platformRequestsPerSecond: 5 }],
      });
      await until(() => w.calls.running === 4);
      await new Promise((r) => setTimeout(r, 500));
      expect(w.calls.running).toBe(4);
      expect((await answerOf(handle, rolloutStatusQuery)).concurrency).toBe(4);
      w.gate.open = true;
      const result = (await handle.result()) as RolloutResult;
      expect(result.totals.converged).toBe(9);
      expect(w.calls.maxRunning).toBe(4);
    });
  });
});
