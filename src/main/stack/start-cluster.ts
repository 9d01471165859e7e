import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../../config/index.js';
import { migrate } from '../../db/migrate.js';
import { createPool } from '../../db/pool.js';
import { Cleanup } from '../../infra/cleanup.js';
import { resolveDatabase } from '../../infra/database.js';
import { preferredOrFreePort } from '../../infra/ports.js';
import { setupNamespace } from '../../client/namespace-setup.js';
import { startTemporalCluster, type RunningTemporalCluster } from '../../infra/temporal-cluster.js';
import { startTenantctl, type RunningTenantctl } from '../../infra/tenantctl-process.js';
import { generateMasterKey } from '../../secrets/master-keys.js';
import { DEFAULT_PERSONAL_TOKEN, DEFAULT_PLATFORM_KEY, startSimulator } from '../../sim/index.js';
import { startDevNotifyReceiver } from './dev-notify.js';
import { allowOwnReceivers, devOperatorSettings, devSecret, givenSettings } from './start-stack.js';

/**
 * The production topology on one machine (`npm run cluster`): a Temporal cluster on Postgres
 * (temporal-cluster.ts), the parent's Postgres (DATABASE_URL or embedded) migrated, the simulator
 * unless PLATFORM_BASE_URL, then WORKERS worker processes and GATEWAYS gateway processes, each a
 * `tenantctl worker` / `tenantctl gateway` with the same settings, as a deployment runs them.
 * Everything lives under DATA_DIR/cluster and survives a restart; stop() goes in reverse order.
 */
export const CLUSTER_WORKERS = 2;
export const CLUSTER_GATEWAYS = 2;

export interface RunningClusterStack {
  temporal: RunningTemporalCluster;
  workers: RunningTenantctl[];
  gateways: Array<RunningTenantctl & { url: string }>;
  /** Settings for a second shell (written to DATA_DIR/stack.json by the entry). */
  env: Record<string, string>;
  simulatorUrl?: string;
  rotation: string;
  stop(): Promise<void>;
}

export async function startClusterStack(options: {
  config: Config;
  given: Record<string, string | undefined>;
  say: (line: string) => void;
  onLine?: (name: string, line: string) => void;
}): Promise<RunningClusterStack> {
  const { config, say } = options;
  const dataDir = resolve(config.DATA_DIR, 'cluster');
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  const cleanup = new Cleanup(say);
  const stop = () => cleanup.runAll();
  try {
    const temporal = await startTemporalCluster({
      dataDir: join(dataDir, 'temporal'),
      persistent: true,
      frontendPort: config.TEMPORAL_DEV_PORT,
      env: options.given,
      onProgress: say,
    });
    cleanup.defer('Temporal cluster (server, then its Postgres)', () => temporal.stop());
    await setupNamespace(temporal.address, config.TEMPORAL_NAMESPACE, say);

    say(config.DATABASE_URL ? 'using DATABASE_URL' : `starting embedded Postgres in ${join(dataDir, 'postgres')}`);
    const database = await resolveDatabase({ DATABASE_URL: config.DATABASE_URL, DATA_DIR: dataDir });
    cleanup.defer('Postgres', () => database.stop());
    const pool = createPool(database.url, { max: 1 });
    const migrated = await migrate(pool).finally(() => pool.end());
    say(migrated.applied.length ? `migrated: ${migrated.applied.join(', ')}` : `schema at version ${migrated.to}`);

    const env: Record<string, string> = {
      ...givenSettings(options.given),
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
      TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
      DATABASE_URL: database.url,
      LOG_LEVEL: config.LOG_LEVEL,
      LOG_FORMAT: config.LOG_FORMAT ?? 'pretty',
      PAYLOAD_CODEC: config.PAYLOAD_CODEC,
    };
    let simulatorUrl: string | undefined;
    if (!config.PLATFORM_BASE_URL) {
      const sim = await startSimulator({ port: 4010 }).catch(() => startSimulator({ port: 0 }));
      cleanup.defer('simulator', () => sim.close());
      Object.assign(env, {
        PLATFORM_BASE_URL: sim.apiBase,
        PLATFORM_API_KEY: DEFAULT_PLATFORM_KEY,
        SIMULATOR_URL: sim.url,
        PLATFORM_PERSONAL_TOKEN: DEFAULT_PERSONAL_TOKEN,
      });
      simulatorUrl = sim.url;
      say(`platform simulator on ${sim.apiBase} (in memory: it forgets its tenants when the cluster stops)`);
    }
    env.SECRETS_KEYS =
      config.SECRETS_KEYS ?? devSecret(dataDir, 'dev-master-key', () => generateMasterKey('dev1'), say);
    if (config.GATEWAY_API_TOKENS.length === 0)
      env.GATEWAY_API_TOKENS = devSecret(
        dataDir,
        'dev-gateway-token',
        () => randomBytes(32).toString('base64url'),
        say,
      );
    Object.assign(env, devOperatorSettings(config, dataDir, say));
    const notify = await startDevNotifyReceiver({ config, dataDir, say });
    if (notify.receiver) cleanup.defer('notify receiver', () => notify.receiver!.close());
    Object.assign(env, notify.env);
    allowOwnReceivers(env, [notify.receiver?.url]);

    // Started side by side (each takes seconds to load and bundle); each is stopped on its own.
    const onLine = options.onLine ? { onLine: options.onLine } : {};
    const workers = await Promise.all(
      Array.from({ length: CLUSTER_WORKERS }, async (_, i) => {
        const worker = await startTenantctl({
          name: `worker-${i + 1}`,
          command: 'worker',
          env,
          readyLine: 'worker polling',
          ...onLine,
        });
        cleanup.defer(worker.name, () => worker.stop());
        say(`${worker.name} polling (pid ${worker.pid})`);
        return worker;
      }),
    );
    const ports: number[] = [];
    for (let i = 0; i < CLUSTER_GATEWAYS; i++) ports.push(await preferredOrFreePort(config.GATEWAY_PORT + i));
    const gateways = await Promise.all(
      ports.map(async (port, i) => {
        const url = `http://127.0.0.1:${port}`;
        const gateway = await startTenantctl({
          name: `gateway-${i + 1}`,
          command: 'gateway',
          env: { ...env, GATEWAY_PORT: String(port), GATEWAY_PUBLIC_URL: config.GATEWAY_PUBLIC_URL ?? url },
          readyLine: 'gateway listening on',
          ...onLine,
        });
        cleanup.defer(gateway.name, () => gateway.stop());
        say(`${gateway.name} on ${url} (pid ${gateway.pid})`);
        return { ...gateway, url };
      }),
    );
    env.GATEWAY_URL = gateways[0]!.url;
    env.TENANTCTL_GATEWAY_URL = gateways[0]!.url;
    return {
      temporal,
      workers,
      gateways,
      env,
      ...(simulatorUrl ? { simulatorUrl } : {}),
      rotation: notify.description,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
