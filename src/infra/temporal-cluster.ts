import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres, type RunningPostgres } from './embedded-postgres.js';
import type { Progress } from './go-install.js';
import { LauncherError, LauncherErrorCode, lastProblemLine } from './launcher-error.js';
import { isPortFree } from './ports.js';
import { findOrBuildTemporalServer, TEMPORAL_SERVER_VERSION } from './temporal-server.js';
import { TemporalServerProcess } from './temporal-server-process.js';

/**
 * A production-shaped Temporal cluster on this machine: the server built from its Go module, its
 * persistence and visibility on an embedded Postgres of its own (databases and schemas made by
 * deploy/temporal/setup-schema.sh with the server's SQL tool, as docker-compose.yml does), the
 * committed config template with 4 history shards. The caller registers the namespace and the
 * search attributes (setupNamespace in src/client, what `tenantctl setup` does). restartServer() stops and starts the
 * server on the same
 * ports and data: workers and clients see a Temporal outage, not a new cluster.
 */
export const DEPLOY_DIR = fileURLToPath(new URL('../../deploy', import.meta.url));
export const CLUSTER_HISTORY_SHARDS = 4;

export interface TemporalClusterOptions {
  /** Holds the cluster's Postgres data and the server log. */
  dataDir: string;
  /** false: the Postgres data is deleted on stop (tests, chaos, bench). */
  persistent: boolean;
  /** Preferred frontend port (taken: a free one); 0 or unset: any free port. */
  frontendPort?: number;
  env?: Record<string, string | undefined>;
  onProgress?: Progress;
}

export interface RunningTemporalCluster {
  address: string;
  historyShards: number;
  serverLog: string;
  /** Superuser URL of the cluster's own Postgres (databases temporal and temporal_visibility). */
  postgresAdminUrl: string;
  restartServer(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startTemporalCluster(options: TemporalClusterOptions): Promise<RunningTemporalCluster> {
  const progress = options.onProgress ?? (() => undefined);
  const binaries = await findOrBuildTemporalServer({
    ...(options.env ? { env: options.env } : {}),
    onProgress: progress,
  });
  mkdirSync(options.dataDir, { recursive: true, mode: 0o755 });
  progress(`starting the Temporal cluster's Postgres in ${join(options.dataDir, 'postgres')}`);
  const postgres = await startEmbeddedPostgres({
    dataDir: join(options.dataDir, 'postgres'),
    persistent: options.persistent,
  });
  let server: TemporalServerProcess | undefined;
  const stop = async () => {
    await server?.stop();
    await postgres.stop();
    if (!options.persistent) rmSync(options.dataDir, { recursive: true, force: true });
  };
  try {
    const db = new URL(postgres.adminUrl);
    const dbEnv = {
      TEMPORAL_DB_HOST: db.hostname,
      TEMPORAL_DB_PORT: db.port,
      TEMPORAL_DB_USER: decodeURIComponent(db.username),
      TEMPORAL_DB_PASSWORD: decodeURIComponent(db.password),
    };
    progress(`applying the Temporal v${TEMPORAL_SERVER_VERSION} Postgres schemas with its SQL tool`);
    await setupSchema(binaries.sqlTool, binaries.schemaDir, postgres, dbEnv);

    const taken = new Set<number>();
    const frontendPort =
      options.frontendPort && (await isPortFree(options.frontendPort))
        ? options.frontendPort
        : await freeMembershipSafePort(taken);
    taken.add(frontendPort);
    const env: Record<string, string> = {
      ...dbEnv,
      TEMPORAL_NUM_HISTORY_SHARDS: String(CLUSTER_HISTORY_SHARDS),
      TEMPORAL_LOG_LEVEL: 'warn',
      TEMPORAL_BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      TEMPORAL_DYNAMIC_CONFIG: join(DEPLOY_DIR, 'temporal', 'dynamicconfig', 'cluster.yaml'),
      TEMPORAL_FRONTEND_PORT: String(frontendPort),
    };
    for (const name of [
      'FRONTEND_HTTP',
      'FRONTEND_MEMBERSHIP',
      'HISTORY',
      'HISTORY_MEMBERSHIP',
      'MATCHING',
      'MATCHING_MEMBERSHIP',
      'WORKER',
      'WORKER_MEMBERSHIP',
    ]) {
      env[`TEMPORAL_${name}_PORT`] = String(await freeMembershipSafePort(taken));
    }
    const address = `127.0.0.1:${frontendPort}`;
    const serverLog = join(options.dataDir, 'temporal-server.log');
    server = new TemporalServerProcess({
      binary: binaries.server,
      root: DEPLOY_DIR,
      env,
      address,
      logFile: serverLog,
      readyTimeoutMs: 90_000,
    });
    progress(
      `starting the Temporal server v${TEMPORAL_SERVER_VERSION} on ${address} (${CLUSTER_HISTORY_SHARDS} ` +
        `history shards, log in ${serverLog})`,
    );
    await server.start();
    const running = server;
    return {
      address,
      historyShards: CLUSTER_HISTORY_SHARDS,
      serverLog,
      postgresAdminUrl: postgres.adminUrl,
      async restartServer(downMs) {
        await running.stop();
        progress(`Temporal server stopped; starting it again in ${downMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, downMs));
        await running.start();
        progress('Temporal server is back');
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * A free port below 32768: the server records membership ports in a `smallint` column, and the
 * kernel's ephemeral ports (what port 0 gives) start at 32768.
 */
async function freeMembershipSafePort(taken: Set<number>): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.has(port) && (await isPortFree(port))) {
      taken.add(port);
      return port;
    }
  }
  throw new LauncherError(
    LauncherErrorCode.TEMPORAL_START_FAILED,
    'no free port between 20000 and 32000 for the Temporal server',
  );
}

function setupSchema(
  sqlTool: string,
  schemaDir: string,
  postgres: RunningPostgres,
  dbEnv: Record<string, string>,
): Promise<void> {
  const child = spawn('sh', [join(DEPLOY_DIR, 'temporal', 'setup-schema.sh')], {
    env: {
      PATH: process.env.PATH ?? '',
      SQL_HOST: dbEnv.TEMPORAL_DB_HOST,
      SQL_PORT: dbEnv.TEMPORAL_DB_PORT,
      SQL_USER: dbEnv.TEMPORAL_DB_USER,
      SQL_PASSWORD: dbEnv.TEMPORAL_DB_PASSWORD,
      TEMPORAL_SQL_TOOL: sqlTool,
      TEMPORAL_SCHEMA_DIR: schemaDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => output.push(...chunk.toString().split('\n').filter(Boolean));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  return new Promise((resolve, reject) => {
    child.once('error', (error) =>
      reject(
        new LauncherError(LauncherErrorCode.TEMPORAL_START_FAILED, `could not run the schema setup: ${error.message}`),
      ),
    );
    child.once('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new LauncherError(
            LauncherErrorCode.TEMPORAL_START_FAILED,
            `Temporal schema setup on port ${postgres.port} failed (exit ${code}): ` +
              `${lastProblemLine(output) ?? 'no output'}`,
            output.join('\n'),
          ),
        );
    });
  });
}
