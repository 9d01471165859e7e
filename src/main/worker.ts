import { Client } from '@temporalio/client';
import { Runtime, type Worker } from '@temporalio/worker';
import { buildDriftOptions } from './wiring/drift-options.js';
import { createDriftListClient } from '../../activities/drift/paced-fetch.js';
import { createRequestPacer } from '../db/request-pacer.js';
import { createActivities } from '../../activities/index.js';
import { reportConfigWarnings, type Config } from '../config/index.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { loggerOf } from '../infra/log.js';
import { connectNative } from '../client/connection.js';
import { ensureEventDispatcher } from '../client/events/events.js';
import { createWorker, workflowSourceOf } from './wiring/create-worker.js';
import { workerRuntimeLogger, workerTelemetry } from './wiring/telemetry.js';
import { dataConverterOf } from './wiring/data-converter.js';
import { buildActivityDeps, requireWorkerConfig, startParentKeyOf } from './wiring/deps.js';
import { createPlatformActivityWorker } from './wiring/platform-worker.js';
import { applyWorkerHeapGrowth, heapGrowthLabel } from './wiring/worker-heap.js';
import { buildRotationOptions } from './wiring/rotation-options.js';
import { createOutboundFetch } from '../infra/outbound/fetch.js';

export interface RunningWorker {
  worker: Worker;
  /** Where its workflow code came from (printed by `tenantctl worker`). */
  workflows: string;
  /** The V8 heap growth it set (WORKER_HEAP_GROWING_PERCENT), as printed by `tenantctl worker`. */
  heapGrowth: string;
  /** Resolves when the worker has stopped (after shutdown()). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

let runtimeInstalled = false;

/** Starts the worker: refuses an out-of-date schema, then polls the task queue until shutdown(). */
export async function startWorker(config: Config): Promise<RunningWorker> {
  const logger = loggerOf(config);
  // Before refusing: a misspelt variable may be why a required one is missing.
  reportConfigWarnings(config, (message) => logger.warn(message));
  requireWorkerConfig(config);
  if (!runtimeInstalled) {
    // Every log line (SDK, workflows, activities) goes through the same redacting logger.
    // shutdownSignals: [] — our entry points own SIGINT/SIGTERM and stop the worker before the
    // server and the database; the SDK's own handlers would race them.
    Runtime.install({
      shutdownSignals: [],
      logger: workerRuntimeLogger(logger, config.LOG_LEVEL),
      // The SDK's metrics and our outcome counters for Prometheus, when asked for.
      telemetryOptions: workerTelemetry(config.WORKER_METRICS_ADDRESS),
    });
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
  const parentKey = await startParentKeyOf(config, pool, 'worker', logger).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  const { connection, namespace } = await connectNative(config).catch(async (error: unknown) => {
    await parentKey.close();
    await pool.end();
    throw error;
  });
  const drift = buildDriftOptions(config, {
    // Drift checks ask Temporal which tenants have work running, and list rotation schedules.
    temporal: new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}) }),
    listPlatform: createDriftListClient({
      baseUrl: config.PLATFORM_BASE_URL,
      platformKey: parentKey,
      timeoutMs: config.PLATFORM_TIMEOUT_MS,
      requestsPerSecond: config.PLATFORM_RATE_LIMIT_PER_SECOND,
      pace: createRequestPacer(pool, config.PLATFORM_RATE_LIMIT_PER_SECOND),
    }),
  });
  const activities = createActivities({
    ...buildActivityDeps(config, pool, logger, parentKey),
    rotation: buildRotationOptions(config, parentKey, createRequestPacer(pool, config.PLATFORM_RATE_LIMIT_PER_SECOND)),
    parentKey: { baseUrl: config.PLATFORM_BASE_URL },
    drift,
    // Event deliveries and rotation notices: checked at connect time against inward addresses.
    outbound: createOutboundFetch({ allowHosts: config.OUTBOUND_ALLOW_HOSTS }),
  });
  // Before the worker starts its workflow threads: the flag is process-wide.
  applyWorkerHeapGrowth(config.WORKER_HEAP_GROWING_PERCENT);
  // Decided once: the prebuilt bundle when this runs from dist/, else the workflow sources (printed at start).
  const workflowSource = workflowSourceOf({});
  const worker = await createWorker({
    connection,
    namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    dataConverter,
    source: workflowSource,
    tuning: config.WORKER_MAX_CACHED_WORKFLOWS ? { maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS } : {},
  });
  // Platform-calling rotation activities run on their own queue under a server-side rate limit.
  const platformWorker = await createPlatformActivityWorker({
    connection,
    namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    requestsPerSecond: config.PLATFORM_RATE_LIMIT_PER_SECOND,
    dataConverter,
  });
  // The event dispatcher of this task queue (one, however many workers): started unless it runs.
  await ensureEventDispatcher(
    new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}) }),
    config.TEMPORAL_TASK_QUEUE,
    {
      policy: { retryFor: config.EVENTS_RETRY_FOR },
    },
  ).catch((error: unknown) =>
    logger.warn({ err: error }, 'could not start the event dispatcher; the next worker start tries again'),
  );
  const workers = [worker, platformWorker];
  const stopAll = () => workers.forEach((w) => w.getState() === 'RUNNING' && w.shutdown());
  // One failing worker stops the other: the process then exits instead of running half a worker.
  const done = Promise.allSettled(
    workers.map((w) => w.run().catch((error: unknown) => (stopAll(), Promise.reject(error)))),
  )
    .then((results) => {
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    })
    .finally(async () => {
      await connection.close();
      await parentKey.close();
      await pool.end();
    });
  return {
    worker,
    workflows: workflowSource.workflowBundle
      ? `prebuilt bundle ${workflowSource.workflowBundle.codePath}`
      : 'bundled from workflows/ at start (no prebuilt bundle: `npm run build` makes one)',
    heapGrowth: heapGrowthLabel(config.WORKER_HEAP_GROWING_PERCENT),
    done,
    shutdown: async () => {
      stopAll();
      await done;
    },
  };
}
