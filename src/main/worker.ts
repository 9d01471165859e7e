import { Runtime, type Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../config.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createLogger, toTemporalLogger } from '../log.js';
import { connectNative } from '../temporal/connection.js';
import { createWorker } from '../worker/create-worker.js';
import { buildActivityDeps, dataConverterOf, requireWorkerConfig } from '../worker/deps.js';

export interface RunningWorker {
  worker: Worker;
  /** Resolves when the worker has stopped (after shutdown()). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

let runtimeInstalled = false;

/** Starts the worker: refuses an out-of-date schema, then polls the task queue until shutdown(). */
export async function startWorker(config: Config): Promise<RunningWorker> {
  requireWorkerConfig(config);
  const logger = createLogger({ level: config.LOG_LEVEL });
  if (!runtimeInstalled) {
    // The SDK's own logs (bundling, state changes) go through the same redacting logger, one level quieter.
    // shutdownSignals: [] — our entry points own SIGINT/SIGTERM and stop the worker before the
    // server and the database; the SDK's own handlers would race them.
    Runtime.install({ shutdownSignals: [], logger: toTemporalLogger(logger.child({ component: 'temporal-sdk' }, { level: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL })) });
    runtimeInstalled = true;
  }
  const dataConverter = dataConverterOf(config);
  const pool = createPool(config.DATABASE_URL, { applicationName: 'tenant-orchestrator-worker', max: 20 });
  try {
    await assertSchemaCurrent(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const { connection, namespace } = await connectNative(config).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  const worker = await createWorker({
    connection,
    namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(buildActivityDeps(config, pool, logger)),
    dataConverter,
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
