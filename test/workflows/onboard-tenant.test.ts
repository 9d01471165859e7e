import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { sendDecision } from '../../src/client/send-decision.js';
import { onboardingWorkflowId } from '../../src/domain/ids.js';
import { ONBOARDING_PURPOSE } from '../../src/domain/onboarding.js';
import { tenantStatusKey } from '../../src/domain/search-attributes.js';
import {
  onboardingStatusQuery,
  parentFundedUpdate,
  resolveTransferUpdate,
} from '../../workflows/onboard-tenant-messages.js';
import { currentWaitQuery } from '../../workflows/waits-messages.js';
import {
  expectBounded,
  fastWorld,
  uniqueId,
  untilValue as until,
  type FastWorld,
  answerOf,
  BOUND_TEST_RUNS,
  callingRun,
} from '../harness/fast-workflow.js';
import { attributeUpserts, expectWaitOnEverySurface } from '../harness/wait-surfaces.js';

/**
 * onboardTenant's funding waits with mocked activities: shown through currentWait with the decisions
 * that apply, bounded by continuing as new (the sub-account and the key never made again), a decision
 * sent after the continuations lands, one that does not apply is refused with the reason, one transfer.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;
const fast = { pollCeiling: '1ms', historyEventBound: BOUND };
const by = { operator: 'alice', reason: 'checked the wallet' };

function onboarding() {
  const calls = { subaccount: 0, key: 0, send: 0, mark: 0, resolve: 0, active: 0, stopped: 0 };
  const purposes = new Set<string>();
  const applied = new Set<string>();
  /** The runs that sent the transfer (a continued run sends it again, under the same purpose). */
  const runs = new Set<string>();
  const state = { answer: 'insufficient' as 'insufficient' | 'apply' | 'unknown' | 'unknown-past-deadline' };
  let needsOperator = false;
  const validation = createInputValidationActivities();
  const activities = {
    beginOnboarding: async (request: { input: unknown; workflowType: string }) => {
      const input = await validation.validateWorkflowInput({
        schema: 'onboardTenant',
        input: request.input,
        workflowType: request.workflowType,
      });
      calls.subaccount += 1;
      return { input, step: { subaccountId: 'sa_1', source: 'created' as const, requestId: null } };
    },
    issueAndVerifyTenantKey: async () => {
      calls.key += 1;
      return { state: 'issued' as const, keyId: 'key_1', fingerprint: 'fp_1', orphansRevoked: [], verified: true };
    },
    fundWallet: async (input: { purpose: string }) => {
      calls.send += 1;
      runs.add(callingRun());
      purposes.add(input.purpose);
      if (applied.has(input.purpose)) return { state: 'succeeded' as const, transferId: 'tr_1', resolution: null };
      if (needsOperator) return { state: 'needs_operator' as const, unknownSince: null };
      switch (state.answer) {
        case 'insufficient':
          return { state: 'insufficient_balance' as const, attempts: calls.send };
        case 'unknown':
          return { state: 'unknown' as const, unknownSince: new Date().toISOString() };
        case 'unknown-past-deadline':
          return { state: 'unknown' as const, unknownSince: new Date(Date.now() - 2 * 3_600_000).toISOString() };
        case 'apply':
          applied.add(input.purpose);
          return { state: 'succeeded' as const, transferId: 'tr_1', resolution: null };
      }
    },
    markTransferNeedsOperator: async () => {
      calls.mark += 1;
      needsOperator = true;
      return { state: 'needs_operator' as const, unknownSince: null };
    },
    resolveTransferByOperator: async (input: { purpose: string; operator: string }) => {
      calls.resolve += 1;
      needsOperator = false;
      applied.add(input.purpose);
      return { state: 'succeeded' as const, transferId: 'tr_1', resolution: `operator:${input.operator}` };
    },
    consumeApproval: async () => ({ required: false }),
    markTenantActive: async () => {
      calls.active += 1;
    },
    markOnboardingStopped: async () => {
      calls.stopped += 1;
    },
  };
  return { calls, purposes, applied, runs, state, activities };
}

// Concurrent: each test has its own task queue, workers, mocks and workflow id, and waits on the dev server far
// more than on a CPU.
describe.concurrent('onboardTenant funding waits (mocked activities)', () => {
  it('waits for the parent funds through several continuations without repeating a step; parentFunded lands after them', async () => {
    const ref = uniqueId('t');
    const o = onboarding();
    await world.run(o.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('onboardTenant', {
        taskQueue,
        workflowId: onboardingWorkflowId(ref),
        args: [
          {
            externalRef: ref,
            name: 'Tenant',
            fundingMicroUsd: '1000000',
            options: { balanceRetryInterval: '1ms', ...fast },
          },
        ],
      });
      while (o.runs.size < BOUND_TEST_RUNS) await new Promise((r) => setTimeout(r, 100));
      const wait = await handle.query(currentWaitQuery);
      expect(wait).toMatchObject({ stage: 'waiting_for_parent_funds', decisions: ['parentFunded'] });
      expect(wait?.waitingFor).toMatch(new RegExp(`tenantctl parent-funded ${ref}`));
      await expectBounded(client, handle, BOUND);
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(Date.parse(wait!.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
      // The status query answers on the continued run, with the steps the first run did.
      const status = await answerOf(handle, onboardingStatusQuery);
      expect(status).toMatchObject({
        externalRef: ref,
        subaccountId: 'sa_1',
        key: { state: 'verified', keyId: 'key_1', fingerprint: 'fp_1' },
        funding: { state: 'insufficient_balance', amountMicroUsd: '1000000' },
      });
      // The stage and TenantStatus stay in the wait while it polls (they flipped to funding and back every poll).
      expect(status.stage).toBe('waiting_for_parent_funds');
      const described = await handle.describe();
      expect(described.typedSearchAttributes.get(tenantStatusKey)).toBe('waiting_for_parent_funds');
      await expectWaitOnEverySurface(client, handle, 'waiting_for_parent_funds', {
        externalRef: ref,
        tenantStatus: 'waiting_for_parent_funds',
      });
      expect(await attributeUpserts(handle)).toBeLessThanOrEqual(2);
      // A decision that does not apply is refused by the validator with the reason.
      await expect(
        sendDecision(client, handle.workflowId, resolveTransferUpdate, { outcome: 'applied', ...by }),
      ).rejects.toThrow(/has no transfer in needs_operator waiting for a verdict \(stage /);

      const answer = await sendDecision(client, handle.workflowId, parentFundedUpdate, by);
      expect(answer.effect).toMatch(/retried now/);
      o.state.answer = 'apply';
      const result = await handle.result();
      expect(result).toMatchObject({
        status: 'active',
        subaccountId: 'sa_1',
        keyId: 'key_1',
        funding: { transferId: 'tr_1' },
      });
      // Nothing repeated across the continuations: one sub-account step, one key, one intent applied once.
      expect(o.calls.subaccount).toBe(1);
      expect(o.calls.key).toBe(1);
      expect(o.calls.active).toBe(1);
      expect([...o.purposes]).toEqual([ONBOARDING_PURPOSE]);
      expect(o.applied.size).toBe(1);
      expect(o.calls.stopped).toBe(0);
    });
  }, 240_000);

  it('reconciles through continuations, then waits for resolveTransfer, which lands on the continued run', async () => {
    const ref = uniqueId('t');
    const o = onboarding();
    o.state.answer = 'unknown';
    await world.run(o.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('onboardTenant', {
        taskQueue,
        workflowId: onboardingWorkflowId(ref),
        args: [
          {
            externalRef: ref,
            name: 'Tenant',
            fundingMicroUsd: '1000000',
            options: { reconcileInterval: '1ms', unknownTransferDeadline: '1h', ...fast },
          },
        ],
      });
      while (o.runs.size < BOUND_TEST_RUNS) await new Promise((r) => setTimeout(r, 100));
      const reconciling = await handle.query(currentWaitQuery);
      expect(reconciling).toMatchObject({ stage: 'reconciling_transfer', decisions: [] });
      await expectBounded(client, handle, BOUND);
      await expectWaitOnEverySurface(client, handle, 'reconciling_transfer', {
        externalRef: ref,
        tenantStatus: 'reconciling_transfer',
      });
      expect(await attributeUpserts(handle)).toBeLessThanOrEqual(2);
      await expect(sendDecision(client, handle.workflowId, parentFundedUpdate, by)).rejects.toThrow(
        /is not waiting for the parent's funds \(stage /,
      );

      o.state.answer = 'unknown-past-deadline';
      const asking = await until(
        () => handle.query(currentWaitQuery),
        (w) => w?.stage === 'needs_operator',
      );
      expect(asking?.decisions).toEqual(['resolveTransfer']);
      expect(asking?.waitingFor).toMatch(new RegExp(`tenantctl resolve-transfer ${ref}`));
      expect((await answerOf(handle, onboardingStatusQuery)).stage).toBe('needs_operator');
      await expectWaitOnEverySurface(client, handle, 'needs_operator', {
        externalRef: ref,
        tenantStatus: 'needs_operator',
      });
      await expect(sendDecision(client, handle.workflowId, parentFundedUpdate, by)).rejects.toThrow(
        /is not waiting for the parent's funds \(stage needs_operator\)/,
      );
      // A bad verdict is refused with the field and the rule, and the run keeps waiting.
      await expect(
        sendDecision(client, handle.workflowId, resolveTransferUpdate, { outcome: 'maybe' as 'applied', ...by }),
      ).rejects.toThrow(/outcome/);

      const answer = await sendDecision(client, handle.workflowId, resolveTransferUpdate, {
        outcome: 'applied',
        ...by,
      });
      expect(answer).toMatchObject({
        transferState: 'succeeded',
        effect: expect.stringMatching(/no transfer is sent/),
      });
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'active', funding: { transferId: 'tr_1' } });
      expect(o.calls.subaccount).toBe(1);
      expect(o.calls.key).toBe(1);
      expect(o.calls.mark).toBe(1);
      expect(o.calls.resolve).toBe(1);
      expect([...o.purposes]).toEqual([ONBOARDING_PURPOSE]);
      expect(await handle.query(currentWaitQuery)).toBeNull();
    });
  }, 240_000);
});

describe('onboardTenant replays what it ran (mocked activities)', () => {
  // A step that fails its first 7 attempts: the 8th backoff (12.8 s) passes the local retry threshold (10 s) and
  // becomes a timer, in the workflow task in which the other step answered (the chaos drill's 429 storm). Replayed,
  // both answers came in one activation, and the timer went before the funding wait's commands (TMPRL1100).
  const backsOff =
    <T>(answer: () => Promise<T>) =>
    async () => {
      if (Context.current().info.attempt <= 7) throw new Error('HTTP 429 RATE_LIMITED (test)');
      return answer();
    };
  it.each([
    ['the key step backs off as the funding answers unknown', 'key'],
    ['the funding step backs off as the key answers', 'funding'],
    ['both steps back off', 'both'],
  ] as const)(
    'replays an onboarding in which %s',
    async (_what, which) => {
      const ref = uniqueId('t');
      const o = onboarding();
      o.state.answer = 'unknown';
      const activities = {
        ...o.activities,
        ...(which !== 'funding' ? { issueAndVerifyTenantKey: backsOff(o.activities.issueAndVerifyTenantKey) } : {}),
        ...(which !== 'key'
          ? { fundWallet: backsOff(() => o.activities.fundWallet({ purpose: ONBOARDING_PURPOSE })) }
          : {}),
      };
      await world.run(activities, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('onboardTenant', {
          taskQueue,
          workflowId: onboardingWorkflowId(ref),
          // Long enough that the seven attempts fit in the first workflow task, as they did in the drill.
          workflowTaskTimeout: '60s',
          args: [
            {
              externalRef: ref,
              name: 'Tenant',
              fundingMicroUsd: '1000000',
              options: { reconcileInterval: '1s', unknownTransferDeadline: '1h' },
            },
          ],
        });
        const backedOff = await until(
          () => handle.fetchHistory(),
          (history) =>
            (history.events ?? []).some(
              (e) => Number(e.timerStartedEventAttributes?.startToFireTimeout?.seconds ?? 0) >= 10,
            ),
        );
        await expect(
          Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, backedOff, ref),
        ).resolves.toBeUndefined();
        await handle.terminate('test done');
      });
    },
    90_000,
  );
});
