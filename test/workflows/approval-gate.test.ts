import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topUpWorkflowId } from '../../src/domain/ids.js';
import { topUpResolveTransferUpdate, topUpStatusQuery } from '../../workflows/fund-tenant-messages.js';
import { currentWaitQuery } from '../../workflows/waits-messages.js';
import { decide, fastWorld, historyLength, uniqueId, waitForStage, type FastWorld } from '../harness/fast-workflow.js';

/**
 * The approval gate (workflows/approval-gate.ts) with mocked activities, on a top-up whose transfer is
 * in needs_operator from its first answer: a verdict acts only once consumeApproval accepted its
 * approval (approve); a rejected or missing approval is refused with its type and the run keeps waiting
 * (reject); a bad verdict is refused by the validator before history and before any check (refuse).
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const by = { operator: 'alice', reason: 'seen on the wallet' };

function gatedTopUp() {
  const checks: Array<{ workflowId: string; outcome: string; operator: string; approvalId: string | null }> = [];
  const resolved: string[] = [];
  let needsOperator = true;
  const activities = {
    recordTopUp: async () => ({
      state: 'recorded' as const,
      subaccountId: 'sa_1',
      purpose: 'top-up:k1',
      intentState: 'pending',
      kind: 'top-up',
      requestedBy: 'test',
    }),
    fundWallet: async () =>
      needsOperator
        ? { state: 'needs_operator' as const, unknownSince: null }
        : { state: 'succeeded' as const, transferId: 'tr_seen', resolution: 'operator:bob' },
    resolveTransferByOperator: async (input: { outcome: string; operator: string }) => {
      resolved.push(`${input.outcome} by ${input.operator}`);
      needsOperator = false;
      return { state: 'succeeded' as const, transferId: 'tr_seen', resolution: `operator:${input.operator}` };
    },
    consumeApproval: async (input: {
      workflowId: string;
      outcome: string;
      operator: string;
      approvalId?: string | null;
    }) => {
      checks.push({ ...input, approvalId: input.approvalId ?? null });
      if (!input.approvalId)
        throw ApplicationFailure.nonRetryable("needs a second operator's approval", 'APPROVAL_REQUIRED');
      if (input.approvalId === 'apr_rejected')
        throw ApplicationFailure.nonRetryable('approval apr_rejected was rejected', 'APPROVAL_NOT_VALID');
      return { required: true };
    },
  };
  return { checks, resolved, activities };
}

async function stillWaiting(handle: WorkflowHandle) {
  expect(await handle.query(currentWaitQuery)).toMatchObject({
    stage: 'needs_operator',
    decisions: ['resolveTransfer'],
  });
}

describe('approval gate on resolveTransfer (mocked activities)', () => {
  it('refuses a bad verdict before history, refuses a missing or rejected approval, and acts on an approved one', async () => {
    const ref = uniqueId('t');
    const gate = gatedTopUp();
    await world.run(gate.activities, async ({ client, taskQueue }) => {
      const workflowId = topUpWorkflowId(ref, 'k1');
      const handle = await client.workflow.start('fundTenant', {
        taskQueue,
        workflowId,
        args: [{ externalRef: ref, idempotencyKey: 'k1', amountMicroUsd: '1000' }],
      });
      await waitForStage(handle, 'needs_operator');

      // Refuse: a bad verdict never reaches history nor the approval check.
      const events = await historyLength(handle);
      await expect(
        decide(handle, topUpResolveTransferUpdate, { ...by, outcome: 'Applied' as 'applied' }),
      ).rejects.toMatchObject({ cause: { type: 'INVALID_DECISION' } });
      expect(await historyLength(handle)).toBe(events);
      expect(gate.checks).toEqual([]);

      // No approval, then a rejected one: refused with the check's type; nothing resolved, still waiting.
      await expect(decide(handle, topUpResolveTransferUpdate, { ...by, outcome: 'applied' })).rejects.toMatchObject({
        cause: { type: 'APPROVAL_REQUIRED' },
      });
      await stillWaiting(handle);
      await expect(
        decide(handle, topUpResolveTransferUpdate, { ...by, outcome: 'applied', approvalId: 'apr_rejected' }),
      ).rejects.toMatchObject({ cause: { type: 'APPROVAL_NOT_VALID' } });
      await stillWaiting(handle);
      expect(gate.resolved).toEqual([]);

      // Approve: the approved verdict is taken, recorded once, and the run goes on.
      const answer = await decide(handle, topUpResolveTransferUpdate, {
        outcome: 'applied',
        operator: 'bob',
        reason: 'seen on the wallet',
        approvalId: 'apr_ok',
      });
      expect(answer).toMatchObject({
        transferState: 'succeeded',
        effect: expect.stringMatching(/no transfer is sent/),
      });
      expect(await handle.result()).toMatchObject({ state: 'succeeded', transferId: 'tr_seen' });
      expect(gate.resolved).toEqual(['applied by bob']);
      // Each check named the run, the verdict and its approval.
      expect(gate.checks).toEqual([
        { workflowId, externalRef: ref, close: false, outcome: 'applied', operator: 'alice', approvalId: null },
        {
          workflowId,
          externalRef: ref,
          close: false,
          outcome: 'applied',
          operator: 'alice',
          approvalId: 'apr_rejected',
        },
        { workflowId, externalRef: ref, close: false, outcome: 'applied', operator: 'bob', approvalId: 'apr_ok' },
      ]);
      expect((await handle.query(topUpStatusQuery)).stage).toBe('succeeded');
    });
  }, 60_000);
});
