/**
 * Child-process entry of the onboarding benchmark's throughput worker: wired like production
 * (src/main/worker.ts: a pool of 20, the real platform client, vault and activities, its own
 * NativeConnection) plus the bench-only baseline activity, in a process of its own so that its RSS
 * and CPU are the worker's alone (the bench process keeps the client and the floor). Options come
 * as JSON in argv; over IPC it answers `{ type: 'statements' }` and stops on `{ type: 'stop' }`.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createPool } from '../../src/db/pool.js';
import { applyWorkerHeapGrowth } from '../../src/main/wiring/worker-heap.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { installQuietSdkLogging } from '../lib/sdk-log.js';
import type { WorkerTuning } from '../lib/worker.js';
import { createBareActivities } from './bare-activities.js';
import { countStatements } from '../../test/harness/count-statements.js';

export interface WorkerChildOptions {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  databaseUrl: string;
  apiBase: string;
  platformKey: string;
  masterKeys: string;
  bundlePath: string;
  tuning: WorkerTuning;
}

const options = JSON.parse(process.argv[2] ?? '{}') as WorkerChildOptions;
// As in production (src/main/worker.ts): WORKER_HEAP_GROWING_PERCENT, 20 unless set, before the workflow threads start.
const { WORKER_HEAP_GROWING_PERCENT: heapGrowingPercent } = loadConfig({
  WORKER_HEAP_GROWING_PERCENT: process.env.WORKER_HEAP_GROWING_PERCENT,
});
applyWorkerHeapGrowth(heapGrowingPercent);
installQuietSdkLogging((line) => console.error(`[bench] worker process: ${line}`));
const pool = createPool(options.databaseUrl, { applicationName: 'tenant-orchestrator-bench-worker', max: 20 });
const statements = countStatements(pool);
const activities = createActivities({
  pool,
  platform: createPlatformClient({ baseUrl: options.apiBase, platformKey: options.platformKey, timeoutMs: 10_000 }),
  vault: createVault(parseMasterKeys(options.masterKeys)),
  logger: createLogger({ level: 'warn' }),
});
const connection = await NativeConnection.connect({ address: options.temporalAddress });
const worker = await Worker.create({
  connection,
  namespace: options.namespace,
  taskQueue: options.taskQueue,
  activities: { ...activities, ...createBareActivities() },
  workflowBundle: { codePath: options.bundlePath },
  ...options.tuning,
});
const running = worker.run();
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  if (worker.getState() === 'RUNNING') worker.shutdown();
  void running
    .finally(async () => {
      await connection.close();
      await pool.end();
    })
    .finally(() => process.exit(0));
};
process.on('message', (message: { type: string }) => {
  if (message.type === 'statements') process.send?.({ type: 'statements', count: statements() });
  if (message.type === 'stop') stop();
});
process.on('disconnect', stop);
process.on('SIGTERM', stop);
process.send?.({ type: 'ready', heapGrowingPercent });
