import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../config.js';
import { reportError } from './report-error.js';
import { stackFile } from './stack/stack-file.js';
import { findOrBuildTemporalServer } from '../infra/temporal-server.js';
import { startClusterStack, type RunningClusterStack } from './stack/start-cluster.js';

/**
 * `npm run cluster`: the production topology on this machine — the Temporal server (built from its
 * Go module on first use) on Postgres with 4 history shards, two worker processes and two gateways.
 * `npm run cluster -- --build-only` only builds and caches the server (CI does it before the tests).
 * Ctrl-C stops everything in reverse order: gateways, workers, then the server and the databases.
 * Run as `node --import tsx`, not through the tsx CLI: its signal relay SIGKILLs a child that does
 * not acknowledge a Ctrl-C within 30 ms, which a loaded machine misses, cutting the shutdown short.
 */
const say = (line: string) => console.error(`[cluster] ${line}`);
let stack: RunningClusterStack | undefined;
let stopping = false;

async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  say('stopping');
  await stack?.stop();
  rmSync(stackFile(loadConfig(process.env).DATA_DIR), { force: true });
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

try {
  if (process.argv.includes('--build-only')) {
    const started = Date.now();
    const built = await findOrBuildTemporalServer({ onProgress: say });
    say(
      `Temporal server ready in ${Math.round((Date.now() - started) / 1000)} s: ${built.server}, ${built.sqlTool}, schemas in ${built.schemaDir}`,
    );
    process.exit(0);
  }
  const config = loadConfig(process.env);
  stack = await startClusterStack({
    config,
    given: process.env,
    say,
    onLine: (name, line) => console.error(`[${name}] ${line}`),
  });
  const file = stackFile(resolve(config.DATA_DIR));
  writeFileSync(file, JSON.stringify(stack.env, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
  console.log('');
  console.log(`Tenant orchestrator cluster is up (task queue ${config.TEMPORAL_TASK_QUEUE}).`);
  console.log(
    `  Temporal:   ${stack.temporal.address} (server ${stack.temporal.historyShards} history shards on Postgres; log ${stack.temporal.serverLog})`,
  );
  console.log(`  Workers:    ${stack.workers.map((w) => `${w.name} pid ${w.pid}`).join(', ')}`);
  console.log(`  Gateways:   ${stack.gateways.map((g) => g.url).join(', ')}`);
  console.log(`  Platform:   ${stack.env.PLATFORM_BASE_URL}${stack.simulatorUrl ? ' (simulator)' : ''}`);
  console.log(`  Rotation:   ${stack.rotation}`);
  console.log(`Settings for another terminal are in ${file} (npx tenantctl ... uses them). Ctrl-C stops everything.`);
  // A worker or gateway that dies on its own takes the cluster down: a half-running topology hides it.
  const first = await Promise.race(
    [...stack.workers, ...stack.gateways].map((p) => p.exited.then((code) => ({ name: p.name, code }))),
  );
  if (!stopping) {
    say(`${first.name} exited on its own (${first.code})`);
    await shutdown(1);
  }
} catch (error) {
  const code = reportError(error);
  await stack?.stop();
  process.exit(code);
}
