import { describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { isTaskFailure, sendDecision } from '../../src/client/send-decision.js';
import type { DecisionAnswer } from '../../src/domain/operator-decisions.js';

/**
 * An operator decision sent while the run's workflow task is being retried after a failure (an earlier update
 * refused by its validator while a local activity held the task open fails that task) is answered
 * FAILED_PRECONDITION "Workflow Task in failed state": nothing reached history, so the decision is sent again
 * (CI saw the verdict of fund-tenant's reconcile test refused this way once, at 450c0ce).
 */
describe('sendDecision: which answers mean "send it again"', () => {
  const rpc = (message: string) => Object.assign(new Error('Workflow Update failed'), { cause: new Error(message) });

  it('a task that failed with the update, and an update that met a task in failed state', () => {
    expect(isTaskFailure(rpc('unexpected workflow task failure: Rejection while ProvisionallyAccepted'))).toBe(true);
    expect(
      isTaskFailure(
        rpc('9 FAILED_PRECONDITION: Unable to perform workflow execution update due to Workflow Task in failed state.'),
      ),
    ).toBe(true);
  });

  it('anything else is an answer, not a retry', () => {
    expect(isTaskFailure(rpc('5 NOT_FOUND: workflow execution not found'))).toBe(false);
    expect(isTaskFailure(new Error('no cause'))).toBe(false);
  });
});

/**
 * CI at 8f7b07e: the verdict's first send met a failed workflow task ("unexpected workflow task failure"), the retried
 * task took the update anyway and the run completed with it, so the second send found the run ended and the operator
 * was told "no running workflow … nothing is waiting for resolveTransfer" about a verdict that had landed.
 */
describe('sendDecision: a decision sent again is the same update', () => {
  const update = { name: 'resolveTransfer' } as UpdateDefinition<DecisionAnswer, [{ outcome: string }]>;
  const answer: DecisionAnswer = { stage: 'done', effect: 'no transfer is sent', transferState: 'succeeded' };

  function fakeClient(status: string, landedIds: Set<string>) {
    const sent: string[] = [];
    let calls = 0;
    const handle = {
      async executeUpdate(_u: unknown, options: { updateId: string }) {
        sent.push(options.updateId);
        calls += 1;
        if (calls === 1) {
          landedIds.add(options.updateId); // the retried workflow task took it
          throw Object.assign(new Error('Workflow Update failed'), {
            cause: new Error('unexpected workflow task failure: Rejection while ProvisionallyAccepted'),
          });
        }
        throw Object.assign(new Error('workflow execution already completed'), { name: 'WorkflowNotFoundError' });
      },
      async describe() {
        return { status: { name: status } };
      },
      getUpdateHandle(updateId: string) {
        return {
          async result() {
            if (landedIds.has(updateId)) return answer;
            throw Object.assign(new Error('update not found'), { name: 'WorkflowUpdateRPCTimeoutOrCancelledError' });
          },
        };
      },
    };
    return { client: { workflow: { getHandle: () => handle } } as unknown as Client, sent };
  }

  it('answers with the outcome of the attempt that landed, and sends every attempt under one update id', async () => {
    const { client, sent } = fakeClient('COMPLETED', new Set());
    await expect(sendDecision(client, 'fund:t-1:k2', update, { outcome: 'applied' })).resolves.toEqual(answer);
    expect(sent).toHaveLength(2);
    expect(new Set(sent).size).toBe(1);
  }, 10_000);

  it('still refuses when no attempt landed and the run has ended', async () => {
    const landed = new Set<string>();
    landed.add = () => landed; // the failed task took nothing
    const { client } = fakeClient('COMPLETED', landed);
    await expect(sendDecision(client, 'fund:t-1:k2', update, { outcome: 'applied' })).rejects.toMatchObject({
      code: 'WORKFLOW_NOT_FOUND',
      message: expect.stringMatching(/nothing is waiting for resolveTransfer/),
    });
  }, 10_000);
});
