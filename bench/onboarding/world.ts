import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { DEFAULT_SEED } from '../../src/sim/index.js';
import { createActivityTimings } from '../lib/activity-timings.js';
import { startSimProcess, type SimProcess } from '../lib/sim-process.js';
import type { BenchContext } from '../lib/types.js';
import { startBenchWorker, type StartedWorker, type WorkerTuning } from '../lib/worker.js';
import { createBareActivities } from './bare-activities.js';
import { countStatements } from '../../test/harness/count-statements.js';

/**
 * The onboarding benchmark's world, wired like production (src/main/worker.ts) and the test
 * harness (test/harness/onboarding-env.ts): a fresh migrated database, a pool of 20, the real
 * platform client, vault and activities, and ONE NativeConnection shared by the worker and the
 * client so starts can be eager. The worker runs in this process; the simulator in a child.
 */
export interface OnboardingWorld {
  sim: SimProcess;
  pool: Pool;
  deps: ActivityDeps;
  activities: ReturnType<typeof createActivities>;
  client: Client;
  taskQueue: string;
  worker: StartedWorker;
  tuning: WorkerTuning;
  activityTimings: ReturnType<typeof createActivityTimings>;
  /** Statements sent through the pool so far (BEGIN and COMMIT included): each is a round trip. */
  postgresStatements: () => number;
  /** What a worker in another process needs to join this world (worker-process.ts). */
  wiring: { databaseUrl: string; platformKey: string; masterKeys: string };
}

/** Enough paid balance that no onboarding of a run ever waits for funds. */
const BENCH_PAID_BALANCE_MICRO_USD = '1000000000000000000';

export async function createOnboardingWorld(context: BenchContext, tuning: WorkerTuning): Promise<OnboardingWorld> {
  const { infra } = context;
  const [databaseUrl, sim] = await Promise.all([
    infra.freshDatabase('onboarding'),
    startSimProcess(
      {
        latencyMs: context.options.latencyMs ?? 25,
        seed: {
          ...DEFAULT_SEED,
          parents: DEFAULT_SEED.parents.map((p) => ({ ...p, paidBalanceMicroUsd: BENCH_PAID_BALANCE_MICRO_USD })),
        },
      },
      infra.cleanup,
    ),
  ]);
  const pool = createPool(databaseUrl, { applicationName: 'tenant-orchestrator-bench', max: 20 });
  infra.cleanup.defer('bench pool', () => pool.end());
  const postgresStatements = countStatements(pool);
  const wiring = {
    databaseUrl,
    platformKey: DEFAULT_SEED.parents[0]!.platformKeys[0]!,
    masterKeys: generateMasterKey('bench'),
  };
  const deps: ActivityDeps = {
    pool,
    platform: createPlatformClient({ baseUrl: sim.apiBase, platformKey: wiring.platformKey, timeoutMs: 10_000 }),
    vault: createVault(parseMasterKeys(wiring.masterKeys)),
    logger: createLogger({ level: 'warn' }),
  };
  const activities = createActivities(deps);

  const connection = await NativeConnection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('native connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });
  const taskQueue = `bench-onboarding-${process.pid}`;
  const activityTimings = createActivityTimings();
  const worker = await startBenchWorker(
    {
      connection,
      namespace: infra.namespace,
      taskQueue,
      activities: { ...activities, ...createBareActivities() },
      tuning,
      activityInterceptors: [activityTimings.interceptor],
    },
    infra.cleanup,
  );
  return {
    sim,
    pool,
    deps,
    activities,
    client,
    taskQueue,
    worker,
    tuning,
    activityTimings,
    postgresStatements,
    wiring,
  };
}
