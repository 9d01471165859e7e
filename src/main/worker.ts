import type { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../config.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { connectNative } from '../temporal/connection.js';
import { createWorker } from '../worker/create-worker.js';

export interface RunningWorker {
  worker: Worker;
  /** Resolves when the worker has stopped (after shutdown()). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/** Starts the worker: refuses an out-of-date schema, then polls the task queue until shutdown(). */
export async function startWorker(config: Config & { DATABASE_URL: string }): Promise<RunningWorker> {
  const pool = createPool(config.DATABASE_URL, { applicationName: 'tenant-orchestrator-worker', max: 20 });
  try {
    await assertSchemaCurrent(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const { connection, namespace } = await connectNative(config);
  const worker = await createWorker({
    connection,
    namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ pool }),
  });
  const done = worker.run().finally(async () => {
    await connection.close();
    await pool.end();
  });
  return {
    worker,
    done,
    shutdown: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
