import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { ensureDatabase } from '../src/infra/database.js';
import { setupNamespace } from '../src/client/namespace-setup.js';
import { startTemporalCluster, type RunningTemporalCluster } from '../src/infra/temporal-cluster.js';
import { startHeadlessDevServer } from '../src/infra/temporal-dev-server.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createDataConverter } from '../src/secrets/payload-codec.js';
import { DEFAULT_PLATFORM_KEY, DEFAULT_SEED, startSimulator, type RunningSimulator } from '../src/sim/index.js';
import type { Cleanup } from '../src/infra/cleanup.js';
import { startNotifyReceiver } from '../src/main/stack/notify-receiver.js';
import { RESTORE_DRIFT_POLICY, type ChaosOptions } from './options.js';
import { startRestartablePostgres, type RestartablePostgres } from './postgres.js';

/** The parent's endpoint for the notify deployer: answers 2xx, checks signatures, keeps the bodies. */
export interface NoticeLog {
  received: Array<{ event: string; body: string; signatureValid: boolean }>;
}

export interface ChaosWorld {
  runDir: string;
  taskQueue: string;
  namespace: string;
  client: Client;
  pool: Pool;
  postgres: RestartablePostgres;
  /** With `cluster`: the Temporal server on Postgres, restartable. */
  temporal?: RunningTemporalCluster;
  sim: RunningSimulator;
  notices: NoticeLog;
  secretsKeys: string;
  /** The production worker's environment (a child process gets exactly this plus PATH/HOME). */
  workerEnv: Record<string, string>;
}

/** 100,000 USD of paid balance: no onboarding of the run ever waits for parent funds. */
const PARENT_PAID_MICRO_USD = '100000000000';

export async function startWorld(options: ChaosOptions, runId: string, cleanup: Cleanup): Promise<ChaosWorld> {
  const log = options.log;
  const runDir = mkdtempSync(join(tmpdir(), `tenant-orch-chaos-${runId}-`));

  let temporalAddress = options.temporalAddress;
  let temporal: RunningTemporalCluster | undefined;
  if (options.cluster) {
    log('starting a Temporal cluster (server on Postgres)');
    // Postgres runs as the postgres user when we are root: its temp parent must be traversable.
    const clusterDir = mkdtempSync(join(tmpdir(), `tenant-orch-chaos-cluster-`));
    chmodSync(clusterDir, 0o755);
    temporal = await startTemporalCluster({ dataDir: join(clusterDir, 'data'), persistent: false, onProgress: log });
    cleanup.defer('Temporal cluster', () =>
      temporal!.stop().finally(() => rmSync(clusterDir, { recursive: true, force: true })),
    );
    await setupNamespace(temporal.address, options.temporalNamespace, log);
    temporalAddress = temporal.address;
  } else if (!temporalAddress) {
    log('starting a headless Temporal dev server');
    const server = await startHeadlessDevServer(cleanup, log, process.env.TEMPORAL_CLI_PATH);
    temporalAddress = server.address;
  }

  log('starting an embedded Postgres that the run may restart');
  const postgres = await startRestartablePostgres(log);
  cleanup.defer('Postgres', () => postgres.stop());
  const databaseUrl = await ensureDatabase(postgres.adminUrl, 'chaos');
  // The checker's own pool: small, and it must survive the restart like the worker's.
  const pool = createPool(databaseUrl, { max: 4, applicationName: 'chaos-checker' });
  cleanup.defer('checker pool', () => pool.end());
  await migrate(pool);

  const [parent] = DEFAULT_SEED.parents;
  const sim = await startSimulator({
    seed: { ...DEFAULT_SEED, parents: [{ ...parent!, paidBalanceMicroUsd: PARENT_PAID_MICRO_USD }] },
    choices: { faultRandomSeed: options.seed },
  });
  cleanup.defer('simulator', () => sim.close());

  const notify = await startNoticeReceiver(cleanup);
  const secretsKeys = generateMasterKey(`chaos${randomBytes(2).toString('hex')}`);
  const connection = await Connection.connect({ address: temporalAddress });
  cleanup.defer('Temporal client', () => connection.close());
  const client = new Client({
    connection,
    namespace: options.temporalNamespace,
    dataConverter: createDataConverter(parseMasterKeys(secretsKeys)),
  });
  const taskQueue = `chaos-${runId}`;

  return {
    runDir,
    taskQueue,
    namespace: options.temporalNamespace,
    client,
    pool,
    postgres,
    ...(temporal ? { temporal } : {}),
    sim,
    notices: notify.log,
    secretsKeys,
    workerEnv: {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: options.temporalNamespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PLATFORM_BASE_URL: sim.apiBase,
      PLATFORM_API_KEY: DEFAULT_PLATFORM_KEY,
      PLATFORM_TIMEOUT_MS: '5000',
      // Rotations should be paced by faults here, not by the budget meant for a real platform.
      PLATFORM_RATE_LIMIT_PER_SECOND: '200',
      SECRETS_KEYS: secretsKeys,
      // Production's setting: every payload encrypted. The checker decodes histories to search them.
      PAYLOAD_CODEC: 'on',
      ROTATION_DEPLOYER: 'notify',
      ROTATION_NOTIFY_URL: notify.url,
      ROTATION_NOTIFY_SECRET: notify.secret,
      // The notice receiver is on loopback: the outbound guard lets this one through.
      OUTBOUND_ALLOW_HOSTS: new URL(notify.url).host,
      LOG_LEVEL: 'info',
      // The restore drill's recovery: drift records again what the platform shows the records lost (never re-sent).
      // Its quiet gate at the drill's time scale (the rotations' is 2 s).
      ...(options.restore ? { DRIFT_POLICY: RESTORE_DRIFT_POLICY, DRIFT_QUIET_PERIOD: '5s' } : {}),
    },
  };
}

async function startNoticeReceiver(cleanup: Cleanup): Promise<{ url: string; secret: string; log: NoticeLog }> {
  const receiver = await startNotifyReceiver();
  cleanup.defer('notify receiver', () => receiver.close());
  return { url: receiver.url, secret: receiver.secret, log: { received: receiver.received } };
}
