import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendDecision } from '../../src/client/send-decision.js';
import { topUpWorkflowId } from '../../src/domain/ids.js';
import { tenantStatusKey } from '../../src/domain/search-attributes.js';
import {
  topUpParentFundedUpdate,
  topUpResolveTransferUpdate,
  topUpStatusQuery,
} from '../../workflows/fund-tenant-messages.js';
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
 * fundTenant's waits with mocked activities: each is shown through currentWait with the decisions that
 * apply, a long wait continues as new within the history bound, a decision sent after a continuation
 * lands, a decision that does not apply is refused with the reason, and one intent is one transfer.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;
const fast = { pollCeiling: '1ms', historyEventBound: BOUND };
const by = { operator: 'alice', reason: 'checked the wallet' };

/**
 * A platform behind the mocked activities: one transfer per intent (purpose), however often the same
 * intent is sent; `answer` says what a call not yet applied gets.
 */
function platform() {
  const calls = { record: 0, send: 0, mark: 0, resolve: 0, cancel: 0, approvals: 0 };
  const purposes = new Set<string>();
  const applied = new Map<string, string>();
  /** The runs that sent the transfer (a continued run sends it again, under the same purpose). */
  const runs = new Set<string>();
  const state = {
    answer: 'insufficient' as 'insufficient' | 'apply' | 'unknown' | 'unknown-past-deadline' | 'records-missing',
    needsOperator: false,
    approval: null as null | Promise<void>,
  };
  const activities = {
    recordTopUp: async (input: { idempotencyKey: string }) => {
      calls.record += 1;
      return {
        state: 'recorded' as const,
        subaccountId: 'sa_1',
        purpose: `top-up:${input.idempotencyKey}`,
        intentState: 'pending',
        kind: 'top-up',
        requestedBy: 'test',
      };
    },
    noteParentInsufficient: async () => undefined,
    cancelTopUp: async () => {
      calls.cancel += 1;
      return null;
    },
    fundWallet: async (input: { purpose: string }) => {
      calls.send += 1;
      runs.add(callingRun());
      purposes.add(input.purpose);
      const done = applied.get(input.purpose);
      if (done) return { state: 'succeeded' as const, transferId: done, resolution: null };
      if (state.needsOperator) return { state: 'needs_operator' as const, unknownSince: null };
      switch (state.answer) {
        case 'insufficient':
          return { state: 'insufficient_balance' as const, attempts: calls.send };
        case 'unknown':
          return { state: 'unknown' as const, unknownSince: new Date().toISOString() };
        case 'records-missing':
          return {
            state: 'unknown' as const,
            unknownSince: new Date(Date.now() - 2 * 3_600_000).toISOString(),
            recordsMissing: `no tenant in our records: waiting for the import (tenantctl import apply --only x)`,
          };
        case 'unknown-past-deadline':
          return { state: 'unknown' as const, unknownSince: new Date(Date.now() - 2 * 3_600_000).toISOString() };
        case 'apply':
          applied.set(input.purpose, `tr_${applied.size + 1}`);
          return { state: 'succeeded' as const, transferId: applied.get(input.purpose)!, resolution: null };
      }
    },
    markTransferNeedsOperator: async () => {
      calls.mark += 1;
      state.needsOperator = true;
      return { state: 'needs_operator' as const, unknownSince: null };
    },
    resolveTransferByOperator: async (input: { purpose: string; outcome: string; operator: string }) => {
      calls.resolve += 1;
      state.needsOperator = false;
      // The transfer had reached the wallet: the verdict settles it, nothing is sent again.
      applied.set(input.purpose, 'tr_seen_in_wallet');
      return { state: 'succeeded' as const, transferId: 'tr_seen_in_wallet', resolution: `operator:${input.operator}` };
    },
    consumeApproval: async (input: { approvalId?: string | null }) => {
      calls.approvals += 1;
      if (state.approval) await state.approval;
      if (!input.approvalId)
        throw ApplicationFailure.nonRetryable("needs a second operator's approval", 'APPROVAL_REQUIRED');
      return { required: true };
    },
  };
  return { calls, purposes, applied, runs, state, activities };
}

async function tenantStatusOf(handle: WorkflowHandle): Promise<unknown> {
  const described = await handle.describe();
  return described.typedSearchAttributes.get(tenantStatusKey);
}

describe('fundTenant waits (mocked activities)', () => {
  it('waits for the parent funds through several continuations, shown with parentFunded, which lands after them; one transfer', async () => {
    const ref = uniqueId('t');
    const world$ = platform();
    await world.run(world$.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('fundTenant', {
        taskQueue,
        workflowId: topUpWorkflowId(ref, 'k1'),
        args: [
          {
            externalRef: ref,
            idempotencyKey: 'k1',
            amountMicroUsd: '1000000',
            options: { balanceRetryInterval: '1ms', ...fast },
          },
        ],
      });
      while (world$.runs.size < BOUND_TEST_RUNS) await new Promise((r) => setTimeout(r, 100));
      const wait = await answerOf(handle, currentWaitQuery);
      expect(wait).toMatchObject({ stage: 'waiting_for_parent_funds', decisions: ['parentFunded'] });
      expect(wait?.waitingFor).toMatch(/tenantctl parent-funded/);
      await expectBounded(client, handle, BOUND);
      // The wait began on the first run and is still the same wait.
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(Date.parse(wait!.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
      // The status surfaces on the continued run: the status query and the TenantStatus attribute.
      const status = await answerOf(handle, topUpStatusQuery);
      expect(status).toMatchObject({ externalRef: ref, idempotencyKey: 'k1', transferState: 'pending' });
      // Set when the wait started, not per poll (it flipped between transferring and the wait on every poll).
      expect(await tenantStatusOf(handle)).toBe('waiting_for_parent_funds');
      await expectWaitOnEverySurface(client, handle, 'waiting_for_parent_funds', {
        externalRef: ref,
        tenantStatus: 'waiting_for_parent_funds',
      });
      expect(await attributeUpserts(handle)).toBeLessThanOrEqual(2);
      // A decision that does not apply is refused with the reason, and changes nothing.
      await expect(
        sendDecision(client, handle.workflowId, topUpResolveTransferUpdate, { outcome: 'applied', ...by }),
      ).rejects.toThrow(/no transfer in needs_operator/);

      // parentFunded, sent to the workflow id, lands on the run that is current after the continuations.
      const answer = await sendDecision(client, handle.workflowId, topUpParentFundedUpdate, by);
      expect(answer.effect).toMatch(/retried now/);
      // (The run retries by itself every millisecond here, so the platform turns funded only now.)
      world$.state.answer = 'apply';
      const result = await handle.result();
      expect(result).toMatchObject({ state: 'succeeded', transferId: 'tr_1' });
      // One intent, recorded once, sent under the same purpose every time, applied once.
      expect(world$.calls.record).toBe(1);
      expect([...world$.purposes]).toEqual(['top-up:k1']);
      expect(world$.applied.size).toBe(1);
      expect(await answerOf(handle, currentWaitQuery)).toBeNull();
    });
  }, 240_000);

  it('reconciles through continuations, then asks an operator: the verdict, checked against its approval, lands on the continued run', async () => {
    const ref = uniqueId('t');
    const world$ = platform();
    world$.state.answer = 'unknown';
    await world.run(world$.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('fundTenant', {
        taskQueue,
        workflowId: topUpWorkflowId(ref, 'k2'),
        args: [
          {
            externalRef: ref,
            idempotencyKey: 'k2',
            amountMicroUsd: '2000000',
            options: { reconcileInterval: '1ms', unknownTransferDeadline: '1h', ...fast },
          },
        ],
      });
      while (world$.runs.size < BOUND_TEST_RUNS) await new Promise((r) => setTimeout(r, 100));
      const reconciling = await answerOf(handle, currentWaitQuery);
      expect(reconciling).toMatchObject({ stage: 'reconciling_transfer', decisions: [] });
      expect(reconciling?.waitingFor).toMatch(/same idempotency key/);
      await expectBounded(client, handle, BOUND);
      await expectWaitOnEverySurface(client, handle, 'reconciling_transfer', {
        externalRef: ref,
        tenantStatus: 'reconciling_transfer',
      });
      expect(await attributeUpserts(handle)).toBeLessThanOrEqual(2);
      // Neither decision applies while the run reconciles on its own.
      await expect(sendDecision(client, handle.workflowId, topUpParentFundedUpdate, by)).rejects.toThrow(
        /not waiting for the parent's funds \(stage /,
      );
      await expect(
        sendDecision(client, handle.workflowId, topUpResolveTransferUpdate, { outcome: 'applied', ...by }),
      ).rejects.toThrow(/no transfer in needs_operator/);

      // Past the deadline: needs_operator, waiting for resolveTransfer alone.
      world$.state.answer = 'unknown-past-deadline';
      const asking = await until(
        () => answerOf(handle, currentWaitQuery).catch(() => null),
        (w) => w?.stage === 'needs_operator',
      );
      expect(asking?.decisions).toEqual(['resolveTransfer']);
      expect(asking?.waitingFor).toMatch(/resolve-transfer .* --key k2/);
      expect(await tenantStatusOf(handle)).toBe('needs_operator');
      await expectWaitOnEverySurface(client, handle, 'needs_operator', {
        externalRef: ref,
        tenantStatus: 'needs_operator',
      });
      await expect(sendDecision(client, handle.workflowId, topUpParentFundedUpdate, by)).rejects.toThrow(
        /not waiting for the parent's funds/,
      );

      // A verdict without its approval is refused by the gate (the run keeps waiting), with the reason.
      await expect(
        sendDecision(client, handle.workflowId, topUpResolveTransferUpdate, { outcome: 'applied', ...by }),
      ).rejects.toMatchObject({ code: 'APPROVAL_REQUIRED' });
      expect(await answerOf(handle, currentWaitQuery)).toMatchObject({
        stage: 'needs_operator',
        decisions: ['resolveTransfer'],
      });

      // While an approved verdict is checked, the wait says so and takes no other verdict.
      let release!: () => void;
      world$.state.approval = new Promise<void>((r) => (release = r));
      const verdict = { outcome: 'applied' as const, approvalId: 'apr_1', ...by };
      const landing = sendDecision(client, handle.workflowId, topUpResolveTransferUpdate, verdict);
      const checking = await until(
        () => answerOf(handle, currentWaitQuery).catch(() => null),
        (w) => w?.decisions.length === 0,
      );
      expect(checking?.waitingFor).toMatch(/being checked against the approval policy/);
      // A second verdict sent while this check (a local activity) holds the workflow task open is refused by
      // the validator, but the SDK can fail that workflow task instead ("Rejection while ProvisionallyAccepted",
      // the client sees "Workflow Update failed"): not asserted here until the SDK answers it reliably.
      release();
      const answer = await landing;
      expect(answer).toMatchObject({
        transferState: 'succeeded',
        effect: expect.stringMatching(/no transfer is sent/),
      });
      const result = await handle.result();
      expect(result).toMatchObject({ state: 'succeeded', transferId: 'tr_seen_in_wallet' });
      // One intent: always sent under its own purpose, never applied a second time.
      expect([...world$.purposes]).toEqual(['top-up:k2']);
      expect(world$.applied.size).toBe(1);
      // Recording the intent, the needs_operator mark and the verdict's settlement are local activities: one runs
      // again when the workflow task that ran it fails (the SDK can fail it when an Update meets a held task, seen
      // under load in CI), and each is idempotent in our records (the intent by its key). What must hold once is
      // above: one intent's purpose, one transfer applied.
      expect(world$.calls.record).toBeGreaterThanOrEqual(1);
      expect(world$.calls.record).toBeLessThanOrEqual(2);
      expect(world$.calls.mark).toBeGreaterThanOrEqual(1);
      expect(world$.calls.mark).toBeLessThanOrEqual(2);
      expect(world$.calls.resolve).toBeGreaterThanOrEqual(1);
      expect(world$.calls.resolve).toBeLessThanOrEqual(2);
      // Every run replays as it ran (the query replays the last one from its history).
      expect(await answerOf(handle, currentWaitQuery)).toBeNull();
    });
  }, 240_000);

  it("waits for the import while the tenant's record is gone, past any deadline, then ends with the transfer", async () => {
    const ref = uniqueId('t');
    const world$ = platform();
    world$.state.answer = 'records-missing';
    await world.run(world$.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('fundTenant', {
        taskQueue,
        workflowId: topUpWorkflowId(ref, 'k4'),
        args: [
          {
            externalRef: ref,
            idempotencyKey: 'k4',
            amountMicroUsd: '1000000',
            options: { reconcileInterval: '1ms', unknownTransferDeadline: '1ms', ...fast },
          },
        ],
      });
      while (world$.calls.send < 5) await new Promise((r) => setTimeout(r, 50));
      const waiting = await answerOf(handle, currentWaitQuery);
      expect(waiting).toMatchObject({ stage: 'reconciling_transfer', decisions: [] });
      expect(waiting?.waitingFor).toMatch(/waiting for the import .*same idempotency key/);
      // Before: past its deadline the run asked an operator about a transfer whose record it cannot mark.
      expect(world$.calls.mark).toBe(0);
      world$.state.answer = 'apply';
      await expect(handle.result()).resolves.toMatchObject({ state: 'succeeded' });
      expect(world$.calls.mark).toBe(0);
      expect(world$.applied.size).toBe(1);
    });
  });

  it('refuses a continued state the run was not handed by its own continuation', async () => {
    const ref = uniqueId('t');
    const world$ = platform();
    await world.run(world$.activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('fundTenant', {
        taskQueue,
        workflowId: topUpWorkflowId(ref, 'k3'),
        args: [
          {
            externalRef: ref,
            idempotencyKey: 'k3',
            amountMicroUsd: '1000000',
            continued: { purpose: 'top-up:other', subaccountId: 'sa_other' },
          },
        ],
      });
      await expect(handle.result()).rejects.toMatchObject({
        // Refused by the run's input check (issue 45), naming the field.
        cause: {
          type: 'INVALID_INPUT',
          message: expect.stringMatching(/continued: set only by a run that continues as new/),
        },
      });
      expect(world$.calls.record).toBe(0);
      expect(world$.calls.send).toBe(0);
    });
  });
});
