import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventDispatcherWorkflowId } from '../../src/domain/ids.js';
import type { DispatchEventsInput } from '../../src/domain/event-streams.js';
import { eventDispatcherStatusQuery } from '../../workflows/dispatch-events.js';
import { fastWorld, uniqueId, until, untilValue, type FastWorld } from '../harness/fast-workflow.js';

/**
 * dispatchEvents with a mocked dispatchOutbox: round after round with the input's batch, wait and stream policy
 * (500 and 5000 ms by default), shown as dispatching on its status query, and a new run with the same input
 * after 200 rounds.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

describe('dispatchEvents (mocked activities)', () => {
  it('dispatches round after round with the defaults, shown as dispatching', async () => {
    const rounds: unknown[] = [];
    await world.run(
      {
        dispatchOutbox: async (input) => {
          rounds.push(input);
          return { events: rounds.length % 2 };
        },
      },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('dispatchEvents', {
          taskQueue,
          workflowId: eventDispatcherWorkflowId(uniqueId(taskQueue)),
          args: [],
        });
        await until(() => rounds.length >= 3);
        const status = await untilValue(
          () => handle.query(eventDispatcherStatusQuery).catch(() => null),
          (s) => s !== null,
        );
        expect(status).toEqual({ stage: 'dispatching', waitingFor: 'new outbox rows (LISTEN), a batch at a time' });
        expect(rounds.slice(0, 3)).toEqual(Array.from({ length: 3 }, () => ({ limit: 500, waitMs: 5_000 })));
        await handle.terminate('test done');
      },
    );
  }, 30_000);

  it('passes its batch, wait and policy on, and continues as new with the same input after 200 rounds', async () => {
    const input: DispatchEventsInput = { batch: 7, waitMs: 10, policy: { idleFor: '5s', retryFor: '1h' } };
    const rounds: unknown[] = [];
    await world.run(
      {
        dispatchOutbox: async (round) => {
          rounds.push(round);
          return { events: 0 };
        },
      },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('dispatchEvents', {
          taskQueue,
          workflowId: eventDispatcherWorkflowId(uniqueId(taskQueue)),
          args: [input],
        });
        await until(async () => (await handle.describe()).runId !== handle.firstExecutionRunId);
        const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
        expect(first.status.name).toBe('CONTINUED_AS_NEW');
        expect(rounds.length).toBeGreaterThanOrEqual(200);
        expect(
          rounds.every((r) => JSON.stringify(r) === JSON.stringify({ limit: 7, waitMs: 10, policy: input.policy })),
        ).toBe(true);
        await until(() => rounds.length > 201);
        await handle.terminate('test done');
      },
    );
    // 200 activity round trips: 3 to 4 s alone, and over 30 s when the machine's two cores are shared with
    // several other test processes.
  }, 120_000);
});
