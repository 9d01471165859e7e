import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { configSchema, loadConfig, type Config } from '../../config/index.js';
import { migrate } from '../../db/migrate.js';
import { createPool } from '../../db/pool.js';
import { embeddedPostgresDir, resolveDatabase } from '../../infra/database.js';
import { LauncherError, LauncherErrorCode } from '../../infra/launcher-error.js';
import { StackRecord, stopLeftovers } from '../../infra/stack-record.js';
import { startTemporalDevServer } from '../../infra/temporal-dev-server.js';
import { startWorker } from '../worker.js';
import { generateMasterKey } from '../../secrets/master-keys.js';
import { hashOperatorToken, OPERATOR_TOKEN_PREFIX } from '../../secrets/operators.js';
import { DEFAULT_PERSONAL_TOKEN, DEFAULT_PLATFORM_KEY, startSimulator } from '../../sim/index.js';
import { Cleanup } from '../../infra/cleanup.js';
import { preferredOrFreePort } from '../../infra/ports.js';
import { startGateway } from '../gateway.js';
import { startDevNotifyReceiver } from './dev-notify.js';
import { startDevEventsReceiver } from './dev-events.js';
import { startWatchdog, type Watchdog } from './watchdog.js';

/**
 * The whole stack on embedded defaults, as a library: `npm start` runs it until Ctrl-C, `npm run
 * demo` runs a throwaway one. Everything already configured (TEMPORAL_ADDRESS, DATABASE_URL,
 * PLATFORM_BASE_URL, SECRETS_KEYS) is used as given; everything missing is started or made here.
 */
export interface StackOptions {
  config: Config;
  /** Throwaway: in-memory Temporal, Postgres in a temp dir, headless. */
  ephemeral?: boolean;
  /** The environment the stack was started with (default process.env): its settings are passed on. */
  given?: Record<string, string | undefined>;
  say?: (line: string) => void;
}

export interface RunningStack {
  /** The variables a CLI or client needs to talk to this stack (written to DATA_DIR/stack.json). */
  env: Record<string, string>;
  simulatorUrl?: string;
  uiUrl?: string;
  gatewayUrl?: string;
  /** How a rotated key reaches consumers here, in a sentence for the banner. */
  rotation: string;
  workerDone: Promise<void>;
  stop(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<RunningStack> {
  const say = options.say ?? (() => undefined);
  const { config } = options;
  const dataDir = options.ephemeral ? mkdtempSync(join(tmpdir(), 'tenant-orch-stack-')) : resolve(config.DATA_DIR);
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  chmodSync(dataDir, 0o755);
  const cleanup = new Cleanup(say);
  let record: StackRecord | undefined;
  let watchdog: Watchdog | undefined;
  const stop = async () => {
    await cleanup.runAll();
    // All it started has stopped: dismiss the watchdog. Else it stops what is left once this process ends.
    if (record?.release()) watchdog?.dismiss();
    if (options.ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };
  // Every setting given to the stack, so a second shell (`npx tenantctl ...`) sees what it sees.
  const env: Record<string, string> = {
    ...givenSettings(options.given ?? process.env),
    TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
    TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    LOG_LEVEL: config.LOG_LEVEL,
    LOG_FORMAT: config.LOG_FORMAT ?? 'pretty',
    PAYLOAD_CODEC: config.PAYLOAD_CODEC,
  };
  const result: Partial<RunningStack> = {};
  try {
    if (!options.ephemeral && !(config.TEMPORAL_ADDRESS && config.DATABASE_URL))
      ({ record, watchdog } = await guardDataDir(dataDir, config, say));
    // The gateway's port is chosen first: the Web UI is told where its codec endpoint lives.
    const gatewayPort = await preferredOrFreePort(options.ephemeral ? 0 : config.GATEWAY_PORT);
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    if (config.TEMPORAL_ADDRESS) env.TEMPORAL_ADDRESS = config.TEMPORAL_ADDRESS;
    else {
      say('starting the Temporal dev server');
      const temporal = await startTemporalDevServer({
        cliPath: config.TEMPORAL_CLI_PATH,
        namespace: config.TEMPORAL_NAMESPACE,
        port: options.ephemeral ? 0 : config.TEMPORAL_DEV_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        headless: options.ephemeral ?? false,
        uiCodecEndpoint: `${gatewayUrl}/codec`,
        ...(options.ephemeral ? {} : { dbFilename: join(dataDir, 'temporal.db') }),
        onProgress: say,
        onSpawn: (pid) => record?.add('temporal', pid),
      });
      cleanup.defer('Temporal dev server', () => temporal.stop());
      env.TEMPORAL_ADDRESS = temporal.address;
      if (temporal.uiUrl) result.uiUrl = temporal.uiUrl;
      // The UI calls the codec cross-origin from whatever port it really got (8233 may be busy).
      const origins = new Set([...config.GATEWAY_CODEC_CORS_ORIGINS, ...(temporal.uiOrigins ?? [])]);
      if (origins.size > 0) env.GATEWAY_CODEC_CORS_ORIGINS = [...origins].join(',');
    }

    say(config.DATABASE_URL ? 'using DATABASE_URL' : `starting embedded Postgres in ${join(dataDir, 'postgres')}`);
    const database = await resolveDatabase({ DATABASE_URL: config.DATABASE_URL, DATA_DIR: dataDir }, undefined, (pid) =>
      record?.add('postgres', pid),
    );
    cleanup.defer('Postgres', () => database.stop());
    env.DATABASE_URL = database.url;
    const pool = createPool(database.url, { max: 1 });
    const migrated = await migrate(pool).finally(() => pool.end());
    say(migrated.applied.length ? `migrated: ${migrated.applied.join(', ')}` : `schema at version ${migrated.to}`);

    if (config.PLATFORM_BASE_URL) {
      env.PLATFORM_BASE_URL = config.PLATFORM_BASE_URL;
      if (config.PLATFORM_API_KEY) env.PLATFORM_API_KEY = config.PLATFORM_API_KEY;
    } else {
      // No platform configured: the simulator stands in, with one seeded parent (fake fixture keys).
      const sim = await startSimulator({ port: options.ephemeral ? 0 : 4010 }).catch(() => startSimulator({ port: 0 }));
      cleanup.defer('simulator', () => sim.close());
      env.PLATFORM_BASE_URL = sim.apiBase;
      env.PLATFORM_API_KEY = DEFAULT_PLATFORM_KEY;
      env.SIMULATOR_URL = sim.url;
      env.PLATFORM_PERSONAL_TOKEN = DEFAULT_PERSONAL_TOKEN;
      result.simulatorUrl = sim.url;
      say(`platform simulator on ${sim.apiBase} (in memory: it forgets its tenants when the stack stops)`);
    }

    env.SECRETS_KEYS =
      config.SECRETS_KEYS ?? devSecret(dataDir, 'dev-master-key', () => generateMasterKey('dev1'), say);
    if (config.GATEWAY_API_TOKENS.length === 0) {
      env.GATEWAY_API_TOKENS = devSecret(
        dataDir,
        'dev-gateway-token',
        () => randomBytes(32).toString('base64url'),
        say,
      );
    }
    env.GATEWAY_PUBLIC_URL = config.GATEWAY_PUBLIC_URL ?? gatewayUrl;
    Object.assign(env, devOperatorSettings(config, dataDir, say));
    const notify = await startDevNotifyReceiver({ config, dataDir, say });
    if (notify.receiver) cleanup.defer('notify receiver', () => notify.receiver!.close());
    Object.assign(env, notify.env);
    result.rotation = notify.description;
    const events = await startDevEventsReceiver({ databaseUrl: database.url, secretsKeys: env.SECRETS_KEYS, say });
    cleanup.defer('events receiver', () => events.close());
    say(
      `events receiver on ${events.url} (subscription ${events.subscriptionId}, every ` +
        `type): prints each verified event`,
    );
    allowOwnReceivers(env, [notify.receiver?.url, events.url]);
    const stackConfig = loadConfig({ ...process.env, ...env, GATEWAY_PORT: String(gatewayPort) });
    const worker = await startWorker(stackConfig);
    cleanup.defer('worker', () => worker.shutdown());
    result.workerDone = worker.done;
    const gateway = await startGateway(stackConfig);
    cleanup.defer('gateway', () => gateway.close());
    env.GATEWAY_URL = gateway.url;
    env.TENANTCTL_GATEWAY_URL = gateway.url;
    result.gatewayUrl = gateway.url;
    return { ...result, env, workerDone: worker.done, stop } as RunningStack;
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * `npm start` on a data directory: a stack that still runs there is refused; what a killed one recorded there
 * (its dev server, its Postgres, its watchdog) is stopped. Then this stack records itself, and a watchdog that
 * stops what it starts should it be killed (watchdog.ts); every process it spawns is recorded as it starts.
 */
async function guardDataDir(
  dataDir: string,
  config: Config,
  say: (line: string) => void,
): Promise<{ record: StackRecord; watchdog: Watchdog | undefined }> {
  const { ownerRunning } = await stopLeftovers(dataDir, {
    say,
    postgresDirs: config.DATABASE_URL ? [] : [embeddedPostgresDir(dataDir)],
  });
  if (ownerRunning)
    throw new LauncherError(
      LauncherErrorCode.STACK_RUNNING,
      `a stack already runs on ${dataDir} (pid ${ownerRunning.pid}): stop it (Ctrl-C in its terminal) or set ` +
        `another DATA_DIR`,
    );
  const record = StackRecord.claim(dataDir);
  const watchdog = startWatchdog(dataDir, record.owner, say);
  if (watchdog) record.add('watchdog', watchdog.pid);
  return { record, watchdog };
}

/** The configuration variables set in `given` (a second shell needs them all: platform, tokens, deployer, ...). */
export function givenSettings(given: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.keys(configSchema.shape).flatMap((name) => (given[name]?.trim() ? [[name, given[name]]] : [])),
  );
}

/**
 * The stack's own receivers are on loopback: the outbound guard lets these (and whatever
 * OUTBOUND_ALLOW_HOSTS was given) through. Shared by `npm start` and `npm run cluster`.
 */
export function allowOwnReceivers(env: Record<string, string>, urls: ReadonlyArray<string | undefined>): void {
  env.OUTBOUND_ALLOW_HOSTS = [env.OUTBOUND_ALLOW_HOSTS, ...urls.flatMap((url) => (url ? [new URL(url).host] : []))]
    .filter(Boolean)
    .join(',');
}

/**
 * The dev stack's operator: without an OPERATORS list of the user's own, one admin named `dev` whose
 * token is a dev secret, so the second terminal's tenantctl is a client of the gateway like any
 * operator's. Approvals and the close delay stay off unless configured (one person runs a dev stack).
 */
export function devOperatorSettings(
  config: Config,
  dataDir: string,
  say: (line: string) => void,
): Record<string, string> {
  if (config.OPERATORS) return {};
  const token = devSecret(
    dataDir,
    'dev-operator-token',
    () => `${OPERATOR_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`,
    say,
  );
  return {
    OPERATORS: `dev:admin:sha256:${hashOperatorToken(token).toString('hex')}`,
    TENANTCTL_OPERATOR_TOKEN: token,
    APPROVAL_POLICY: config.APPROVAL_POLICY ?? 'none',
    CLOSE_DELAY: config.CLOSE_DELAY ?? '0',
  };
}

/** A dev-only secret kept in the data directory (0600), made on first start; production sets its variable. */
export function devSecret(dataDir: string, name: string, make: () => string, say: (line: string) => void): string {
  const file = join(dataDir, name);
  if (!existsSync(file)) {
    writeFileSync(file, `${make()}\n`, { mode: 0o600 });
    say(`generated a DEV secret in ${file} (set it in the environment in production)`);
  }
  return readFileSync(file, 'utf8').trim();
}
