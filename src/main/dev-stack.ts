import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { resolveDatabase } from '../infra/database.js';
import { startTemporalDevServer } from '../infra/temporal-dev-server.js';
import { reportError, stackFile } from '../cli/context.js';
import { startWorker } from './worker.js';

/**
 * `npm start`: the whole stack on embedded defaults, in one process tree — the Temporal dev server
 * (with its Web UI, workflows kept in DATA_DIR/temporal.db), Postgres (embedded unless DATABASE_URL),
 * migrations, the worker. Ctrl-C stops everything it started, in reverse order.
 */
const say = (line: string) => console.error(`[stack] ${line}`);
const stops: Array<() => Promise<void>> = [];

async function stopAll() {
  for (const stop of stops.reverse()) await stop().catch((error: unknown) => say(`stop failed: ${String(error)}`));
}

async function main(config: Config) {
  mkdirSync(config.DATA_DIR, { recursive: true, mode: 0o755 });
  const env: Record<string, string> = {};

  if (config.TEMPORAL_ADDRESS) say(`using Temporal at ${config.TEMPORAL_ADDRESS}`);
  else {
    say('starting the Temporal dev server');
    const temporal = await startTemporalDevServer({
      cliPath: config.TEMPORAL_CLI_PATH,
      namespace: config.TEMPORAL_NAMESPACE,
      port: config.TEMPORAL_DEV_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      headless: false,
      dbFilename: resolve(config.DATA_DIR, 'temporal.db'),
      onProgress: say,
    });
    stops.push(() => temporal.stop());
    env.TEMPORAL_ADDRESS = temporal.address;
    say(`Temporal ${temporal.address}${temporal.uiUrl ? `, Web UI ${temporal.uiUrl}` : ''}`);
    if (temporal.uiUrl) env.TEMPORAL_UI_URL = temporal.uiUrl;
  }

  say(config.DATABASE_URL ? 'using DATABASE_URL' : `starting embedded Postgres in ${resolve(config.DATA_DIR, 'postgres')}`);
  const database = await resolveDatabase(config);
  stops.push(() => database.stop());
  env.DATABASE_URL = database.url;

  const pool = createPool(database.url, { max: 1 });
  const migrated = await migrate(pool).finally(() => pool.end());
  say(migrated.applied.length ? `migrated: ${migrated.applied.join(', ')}` : `schema at version ${migrated.to}`);

  const stackConfig = loadConfig({ ...process.env, ...env });
  const worker = await startWorker({ ...stackConfig, DATABASE_URL: database.url });
  stops.push(() => worker.shutdown());

  writeFileSync(stackFile(config.DATA_DIR), JSON.stringify({ ...env, TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE }, null, 2), { mode: 0o600 });
  stops.push(async () => rmSync(stackFile(config.DATA_DIR), { force: true }));

  console.log('');
  console.log(`Tenant orchestrator is up (task queue ${config.TEMPORAL_TASK_QUEUE}).`);
  if (env.TEMPORAL_UI_URL) console.log(`  Temporal Web UI: ${env.TEMPORAL_UI_URL}`);
  console.log(`  Temporal:        ${env.TEMPORAL_ADDRESS ?? config.TEMPORAL_ADDRESS}`);
  console.log(`  Postgres:        ${database.source === 'embedded' ? 'embedded, data in ' + resolve(config.DATA_DIR, 'postgres') : 'DATABASE_URL'}`);
  console.log('  In another terminal, `npx tenantctl --help` talks to this stack. Ctrl-C stops everything.');
  await worker.done;
}

let stopping = false;
const shutdown = (signal: string) => {
  if (stopping) return;
  stopping = true;
  say(`${signal}: stopping`);
  void stopAll().then(() => process.exit(0));
};
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));

try {
  await main(loadConfig(process.env));
} catch (error) {
  const code = reportError(error);
  await stopAll();
  process.exit(code);
}
