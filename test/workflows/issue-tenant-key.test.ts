import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyIssueWorkflowId } from '../../src/domain/ids.js';
import { sendDecision } from '../../src/client/send-decision.js';
import { abortKeyIssueUpdate, retryKeyIssueUpdate } from '../../workflows/keys/key-slot-messages.js';
import { currentWaitQuery } from '../../workflows/waits-messages.js';
import {
  BOUND_TEST_RUNS,
  callingRun,
  fastWorld,
  historyLength,
  uniqueId,
  type FastWorld,
  decide,
} from '../harness/fast-workflow.js';

/** issueTenantKey's decisions with mocked activities: the key-limit wait, its bound, retry and abort. */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;

const atLimit = {
  state: 'key_limit' as const,
  activeKeys: [{ id: 'key_a', name: 'other', lastUsedAt: null, lastUseKnown: true }],
};

function mocks(issueAnswers: () => unknown) {
  const calls = { issue: 0, abandon: 0, verify: 0, runs: new Set<string>() };
  return {
    calls,
    activities: {
      beginSlotKeyIssue: async () => ({ state: 'issue' as const, subaccountId: 'sa_1', generation: 1 }),
      // One step issues and proves the key (issue 44); it proves only a key it issued.
      issueAndVerifyTenantKey: async () => {
        calls.issue += 1;
        calls.runs.add(callingRun());
        const answer = issueAnswers() as { state: string };
        if (answer.state !== 'issued') return answer;
        calls.verify += 1;
        return { ...answer, verified: true };
      },
      abandonSlotKeyIssue: async () => {
        calls.abandon += 1;
      },
    },
  };
}

describe('issueTenantKey (mocked activities)', () => {
  it('shows the key-limit wait, bounds its history across continuations, and takes a decision after continuing as new', async () => {
    const ref = uniqueId('t');
    let limit = true;
    const { calls, activities } = mocks(() =>
      limit ? atLimit : { state: 'issued', keyId: 'key_new', fingerprint: 'fp', orphansRevoked: [] },
    );
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('issueTenantKey', {
        taskQueue,
        workflowId: keyIssueWorkflowId(ref, 'ci'),
        args: [
          {
            externalRef: ref,
            slot: 'ci',
            options: { keyLimitRetryInterval: '1ms', pollCeiling: '1ms', historyEventBound: BOUND },
          },
        ],
      });
      // Polls at 1 ms past several continuations: each run's history stays within the bound (a poll adds
      // about six events; the dev server takes about 200 ms per timer round trip, hence not thousands here).
      while (calls.runs.size < BOUND_TEST_RUNS) await new Promise((r) => setTimeout(r, 100));
      const wait = await handle.query(currentWaitQuery);
      expect(wait?.stage).toBe('key_limit');
      expect(wait?.decisions).toEqual(['retryKeyCreate', 'abortKeyIssue']);
      expect(wait?.waitingFor).toMatch(/active-key limit/);
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
      // The wait began before the first continuation and is still the same wait.
      const since = Date.parse(wait!.since);
      expect(since).toBeLessThanOrEqual(first.closeTime!.getTime());
      for await (const run of client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` }))
        expect(await historyLength(handle, run.runId)).toBeLessThanOrEqual(BOUND + 20);
      // A decision sent to the workflow id lands on the current run.
      // Sent as every surface sends it (sendDecision): an update that meets a continuation is sent again. The
      // limit lifts only once the decision is taken: with 1 ms polls, lifted before, the run could issue the
      // key and end before the decision reached it.
      const answer = await sendDecision(client, handle.workflowId, retryKeyIssueUpdate, {
        operator: 'alice',
        reason: 'revoked one',
      });
      expect(answer.stage).toBe('key_limit');
      limit = false;
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'issued', keyId: 'key_new', generation: 1 });
      expect(calls.verify).toBe(1);
    });
  }, 120_000);

  it('refuses a decision that does not apply, and aborts at the limit with nothing created', async () => {
    const ref = uniqueId('t');
    const { calls, activities } = mocks(() => atLimit);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('issueTenantKey', {
        taskQueue,
        workflowId: keyIssueWorkflowId(ref, 'ci'),
        args: [{ externalRef: ref, slot: 'ci', options: { keyLimitRetryInterval: '1h' } }],
      });
      for (;;) {
        const wait = await handle.query(currentWaitQuery).catch(() => null);
        if (wait) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await expect(decide(handle, abortKeyIssueUpdate, { operator: 'alice', reason: '' })).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/reason/) },
      });
      await decide(handle, abortKeyIssueUpdate, { operator: 'alice', reason: 'not needed' });
      await expect(handle.result()).rejects.toThrow();
      expect(calls.abandon).toBe(1);
      expect(calls.verify).toBe(0);
    });
  });
});
