import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { inject } from 'vitest';
import { createFastWorkers, type ActivityMocks } from './fast-workflow.js';

/**
 * A message that comes with a run's first workflow task (as one does when it is sent right after a start or a
 * continue-as-new, before any worker has picked the run up): the run is started and `send` sent while no worker
 * polls its task queue, then the workers start. Returns what `send` answered, with the run's handle; the run is
 * terminated once `inspect` has looked at it.
 */
export async function sentWithFirstTask<T>(
  client: Client,
  mocks: ActivityMocks,
  start: (taskQueue: string) => Promise<WorkflowHandle>,
  send: (handle: WorkflowHandle) => Promise<T>,
  inspect: (handle: WorkflowHandle, answer: PromiseSettledResult<T>) => Promise<void>,
): Promise<void> {
  const taskQueue = `first-task-${randomUUID()}`;
  const handle = await start(taskQueue);
  const answer = send(handle).then(
    (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
    (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
  );
  // The Update reaches the server and waits there for the run's first task.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const native = await NativeConnection.connect({ address: inject('temporalAddress') });
  const { main, platform } = await createFastWorkers(native, taskQueue, mocks);
  try {
    await main.runUntil(
      platform.runUntil(async () => {
        await inspect(handle, await answer);
        // A run the test drove to its end is left as it ended.
        const running = (await handle.describe()).status.name === 'RUNNING';
        if (running) await handle.terminate('the test looked at it');
      }),
    );
  } finally {
    await native.close().catch(() => undefined);
  }
}
