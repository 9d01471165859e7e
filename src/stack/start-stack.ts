import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { resolveDatabase } from '../infra/database.js';
import { startTemporalDevServer } from '../infra/temporal-dev-server.js';
import { startWorker } from '../main/worker.js';
import { generateMasterKey } from '../secrets/master-keys.js';
import { DEFAULT_PLATFORM_KEY, startSimulator } from '../sim/index.js';

/**
 * The whole stack on embedded defaults, as a library: `npm start` runs it until Ctrl-C, `npm run
 * demo` runs a throwaway one. Everything already configured (TEMPORAL_ADDRESS, DATABASE_URL,
 * PLATFORM_BASE_URL, SECRETS_KEYS) is used as given; everything missing is started or made here.
 */
export interface StackOptions {
  config: Config;
  /** Throwaway: in-memory Temporal, Postgres in a temp dir, headless. */
  ephemeral?: boolean;
  say?: (line: string) => void;
}

export interface RunningStack {
  /** The variables a CLI or client needs to talk to this stack (written to DATA_DIR/stack.json). */
  env: Record<string, string>;
  simulatorUrl?: string;
  uiUrl?: string;
  workerDone: Promise<void>;
  stop(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<RunningStack> {
  const say = options.say ?? (() => undefined);
  const { config } = options;
  const dataDir = options.ephemeral ? mkdtempSync(join(tmpdir(), 'tenant-orch-stack-')) : resolve(config.DATA_DIR);
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  chmodSync(dataDir, 0o755);
  const stops: Array<{ name: string; fn: () => Promise<void> }> = [];
  const stop = async () => {
    for (const { name, fn } of stops.reverse()) {
      say(`stopping ${name}`);
      // Bounded: a part that cannot stop cleanly must not keep the rest running.
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(() => (say(`${name} did not stop within 20 s; going on`), resolve()), 20_000)));
      await Promise.race([fn().catch((error: unknown) => say(`stopping ${name} failed: ${String(error)}`)), timeout]);
      clearTimeout(timer);
    }
    if (options.ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };
  const env: Record<string, string> = { TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE, LOG_LEVEL: config.LOG_LEVEL };
  const result: Partial<RunningStack> = {};
  try {
    if (config.TEMPORAL_ADDRESS) env.TEMPORAL_ADDRESS = config.TEMPORAL_ADDRESS;
    else {
      say('starting the Temporal dev server');
      const temporal = await startTemporalDevServer({
        cliPath: config.TEMPORAL_CLI_PATH,
        namespace: config.TEMPORAL_NAMESPACE,
        port: options.ephemeral ? 0 : config.TEMPORAL_DEV_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        headless: options.ephemeral ?? false,
        ...(options.ephemeral ? {} : { dbFilename: join(dataDir, 'temporal.db') }),
        onProgress: say,
      });
      stops.push({ name: 'Temporal dev server', fn: () => temporal.stop() });
      env.TEMPORAL_ADDRESS = temporal.address;
      if (temporal.uiUrl) result.uiUrl = temporal.uiUrl;
    }

    say(config.DATABASE_URL ? 'using DATABASE_URL' : `starting embedded Postgres in ${join(dataDir, 'postgres')}`);
    const database = await resolveDatabase({ DATABASE_URL: config.DATABASE_URL, DATA_DIR: dataDir });
    stops.push({ name: 'Postgres', fn: () => database.stop() });
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
      stops.push({ name: 'simulator', fn: () => sim.close() });
      env.PLATFORM_BASE_URL = sim.apiBase;
      env.PLATFORM_API_KEY = DEFAULT_PLATFORM_KEY;
      env.SIMULATOR_URL = sim.url;
      result.simulatorUrl = sim.url;
      say(`platform simulator on ${sim.apiBase} (in memory: it forgets its tenants when the stack stops)`);
    }

    env.SECRETS_KEYS = config.SECRETS_KEYS ?? devMasterKey(dataDir, say);
    const stackConfig = loadConfig({ ...process.env, ...env });
    const worker = await startWorker(stackConfig);
    stops.push({ name: 'worker', fn: () => worker.shutdown() });
    result.workerDone = worker.done;
    return { ...result, env, workerDone: worker.done, stop } as RunningStack;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A dev-only master key kept in the data directory (0600), made on first start. */
function devMasterKey(dataDir: string, say: (line: string) => void): string {
  const file = join(dataDir, 'dev-master-key');
  if (!existsSync(file)) {
    writeFileSync(file, `${generateMasterKey('dev1')}\n`, { mode: 0o600 });
    say(`generated a DEV master key in ${file} (set SECRETS_KEYS in production)`);
  }
  return readFileSync(file, 'utf8').trim();
}
