import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyIssueWorkflowId } from '../../src/domain/ids.js';
import { abortKeyIssueUpdate, retryKeyIssueUpdate } from '../../workflows/keys/key-slot-messages.js';
import { currentWaitQuery } from '../../workflows/waits-messages.js';
import { sendDecision } from '../../src/client/send-decision.js';
import { fastWorld, uniqueId, type FastWorld, decide } from '../harness/fast-workflow.js';
import { sentWithFirstTask } from '../harness/first-task.js';

/** issueTenantKey's decisions once one is taken: a decision the run will not carry out is refused, never accepted. */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

/** databaseStep's localRetryThreshold is 10 s (workflows/activity-policies.ts): a longer backoff is a timer. */
const PAST_LOCAL_RETRY_THRESHOLD = '10500ms';

const atLimit = {
  state: 'key_limit' as const,
  activeKeys: [{ id: 'key_a', name: 'other', lastUsedAt: null, lastUseKnown: true }],
};

describe('issueTenantKey decisions after an abort (mocked activities)', () => {
  it(
    'refuses retry-key-create and a second abort once an abort is accepted, while the run gives the issue up',
    {
      timeout: 90_000,
    },
    async () => {
      const ref = uniqueId('t');
      let abandonCalls = 0;
      const activities = {
        beginSlotKeyIssue: async () => ({ state: 'issue' as const, subaccountId: 'sa_1', generation: 1 }),
        issueAndVerifyTenantKey: async () => atLimit,
        // The database is down for a while as the run gives the issue up: its retry backs off past the local
        // retry threshold (10 s), so the run waits on a timer and takes decisions meanwhile. The failure names its
        // own retry delay, just past the threshold: with the policy's 200 ms doubling it took 7 failures and
        // 25 s to get there, a timer all the same.
        abandonSlotKeyIssue: async () => {
          abandonCalls += 1;
          if (abandonCalls === 1)
            throw ApplicationFailure.create({
              message: 'database unavailable',
              nextRetryDelay: PAST_LOCAL_RETRY_THRESHOLD,
            });
        },
      };
      await world.run(activities, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('issueTenantKey', {
          taskQueue,
          workflowId: keyIssueWorkflowId(ref, 'ci'),
          args: [{ externalRef: ref, slot: 'ci', options: { keyLimitRetryInterval: '1h' } }],
        });
        while (!(await handle.query(currentWaitQuery).catch(() => null))) await new Promise((r) => setTimeout(r, 50));
        const by = { operator: 'alice', reason: 'not needed' };
        await decide(handle, abortKeyIssueUpdate, by);
        while (abandonCalls < 1) await new Promise((r) => setTimeout(r, 100));
        for (const update of [retryKeyIssueUpdate, abortKeyIssueUpdate])
          await expect(decide(handle, update, { operator: 'bob', reason: 'key b revoked' })).rejects.toMatchObject({
            cause: { message: expect.stringMatching(/abortKeyIssue was accepted/) },
          });
        await expect(handle.result()).rejects.toMatchObject({
          cause: { message: expect.stringMatching(/aborted at the active-key limit by alice: not needed/) },
        });
        expect(abandonCalls).toBe(2);
        // The retry waited on a timer in the run's history (the decisions above were taken during it).
        const timers = ((await handle.fetchHistory()).events ?? []).flatMap((e) =>
          e.timerStartedEventAttributes ? [Number(e.timerStartedEventAttributes.startToFireTimeout?.seconds)] : [],
        );
        expect(timers).toContain(10);
      });
    },
  );

  it('takes a decision sent before the run installed its handlers (just started or continued): sendDecision sends it again', async () => {
    const ref = uniqueId('t');
    const workflowId = keyIssueWorkflowId(ref, 'ci');
    let abandoned = 0;
    const activities = {
      beginSlotKeyIssue: async () => ({ state: 'issue' as const, subaccountId: 'sa_1', generation: 1 }),
      issueAndVerifyTenantKey: async () => atLimit,
      abandonSlotKeyIssue: async () => {
        abandoned += 1;
      },
    };
    await sentWithFirstTask(
      world.client,
      activities,
      (taskQueue) =>
        world.client.workflow.start('issueTenantKey', {
          taskQueue,
          workflowId,
          args: [{ externalRef: ref, slot: 'ci', options: { keyLimitRetryInterval: '1h' } }],
        }),
      // The decision arrives with the run's first task (its input check runs before its handlers exist);
      // the run reaches the key limit within the retries, where the decision applies.
      (handle) =>
        sendDecision(world.client, handle.workflowId, abortKeyIssueUpdate, { operator: 'alice', reason: 'not needed' }),
      async (handle, answer) => {
        expect(answer).toMatchObject({ status: 'fulfilled', value: { stage: 'key_limit' } });
        await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'API_KEY_LIMIT_REACHED' } });
        expect(abandoned).toBe(1);
      },
    );
  });
});
