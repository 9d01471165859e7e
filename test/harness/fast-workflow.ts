import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import type { Activities } from '../../activities/index.js';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { platformTaskQueue } from '../../src/domain/ids.js';
import { quietLogger } from './quiet-logger.js';

/**
 * A workflow test in seconds: the production workflows (bundled once by test/harness/fast-setup.ts)
 * on the shared dev server, with MOCKED activities — the decision logic alone, no Postgres and no
 * platform. Each call gets its own task queue (and its `-platform` queue, served by the same mocks),
 * so tests in one file never share a worker.
 *
 *   const world = await fastWorld();                  // once per file (afterAll: world.close())
 *   await world.run({ validateWorkflowInput: async (a) => a.input, ... }, async ({ client, taskQueue }) => {
 *     const handle = await client.workflow.start('issueTenantKey', { taskQueue, workflowId, args: [input] });
 *     ...
 *   });
 *
 * Mocks are typed by the real activity signatures; an activity without a mock fails as not registered,
 * so a test names every call the path under test makes.
 */
export type ActivityMocks = Partial<{ [K in keyof Activities]: (...args: Parameters<Activities[K]>) => unknown }>;

export interface FastWorld {
  client: Client;
  run<T>(mocks: ActivityMocks, body: (ctx: { client: Client; taskQueue: string }) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

export async function fastWorld(): Promise<FastWorld> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: quietLogger() });
    runtimeInstalled = true;
  }
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const native = await NativeConnection.connect({ address });
  const client = new Client({ connection, namespace });
  return {
    client,
    async run(mocks, body) {
      const taskQueue = `fast-${randomUUID()}`;
      // Input validation is the real one (pure zod): a test's input is checked as in production.
      const activities = { ...createInputValidationActivities(), ...mocks } as Record<
        string,
        (...args: unknown[]) => unknown
      >;
      const main = await Worker.create({
        connection: native,
        namespace,
        taskQueue,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        activities,
        // Short sticky timeout: a test that ends with a run still cached lets go at once.
        stickyQueueScheduleToStartTimeout: '1s',
      });
      const platform = await Worker.create({
        connection: native,
        namespace,
        taskQueue: platformTaskQueue(taskQueue),
        activities,
      });
      return main.runUntil(platform.runUntil(body({ client, taskQueue })));
    },
    async close() {
      await connection.close();
      await native.close().catch(() => undefined);
    },
  };
}

/** A workflow id no other test uses. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** The number of events in a run's history (one run: continue-as-new starts a new one). */
export async function historyLength(handle: WorkflowHandle, runId?: string): Promise<number> {
  const history = await handle.client.getHandle(handle.workflowId, runId).fetchHistory();
  return history.events?.length ?? 0;
}
