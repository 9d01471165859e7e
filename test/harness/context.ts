import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createWorker } from '../../src/main/wiring/create-worker.js';
import { dropDatabase } from './database.js';
import { quietLogger } from './quiet-logger.js';

export interface TestContext {
  databaseUrl: string;
  pool: Pool;
  taskQueue: string;
  client: Client;
  /** Starts a worker on this file's task queue with the run's workflow bundle. */
  startWorker(activities: object): Promise<TestWorker>;
  close(): Promise<void>;
}

export interface TestWorker {
  worker: Worker;
  stop(): Promise<void>;
}

let runtimeInstalled = false;

/** Each test file: its own database cloned from the migrated template, its own task queue. */
export async function createTestContext(label: string): Promise<TestContext> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: quietLogger() });
    runtimeInstalled = true;
  }
  const suffix = randomBytes(4).toString('hex');
  const databaseName = `t_${label.replace(/[^a-z0-9]/g, '_').slice(0, 30)}_${suffix}`;
  const adminUrl = inject('postgresAdminUrl');
  await cloneTemplate(adminUrl, inject('templateDatabase'), databaseName);
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  const databaseUrl = url.toString();
  const pool = createPool(databaseUrl, { max: 10 });

  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const nativeConnection = await NativeConnection.connect({ address });
  const taskQueue = `test-${label}-${suffix}`;
  const workers: TestWorker[] = [];

  return {
    databaseUrl,
    pool,
    taskQueue,
    client,
    async startWorker(activities) {
      const worker = await createWorker({
        connection: nativeConnection,
        namespace,
        taskQueue,
        activities,
        workflowBundle: { codePath: inject('workflowBundlePath') },
      });
      const running = worker.run();
      const handle: TestWorker = {
        worker,
        stop: async () => {
          if (worker.getState() === 'RUNNING') worker.shutdown();
          await running;
        },
      };
      workers.push(handle);
      return handle;
    },
    async close() {
      for (const worker of workers) await worker.stop();
      await nativeConnection.close();
      await connection.close();
      await pool.end();
      await dropDatabase(adminUrl, databaseName);
    },
  };
}

async function cloneTemplate(adminUrl: string, template: string, name: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    // Two files cloning at once can collide on the template ("being accessed"): retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(
          `CREATE DATABASE ${client.escapeIdentifier(name)} TEMPLATE ${client.escapeIdentifier(template)}`,
        );
        return;
      } catch (error) {
        if (attempt >= 20 || !/being accessed/.test((error as Error).message)) throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await client.end();
  }
}
