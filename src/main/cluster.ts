import { findOrBuildTemporalServer } from '../infra/temporal-server.js';
import { reportError } from './report-error.js';
import { runStackProcess } from './stack/run-stack-process.js';
import { startClusterStack } from './stack/start-cluster.js';

/**
 * `npm run cluster`: the production topology on this machine — the Temporal server (built from its
 * Go module on first use) on Postgres with 4 history shards, two worker processes and two gateways.
 * `npm run cluster -- --build-only` only builds and caches the server (CI does it before the tests).
 * Ctrl-C stops everything in reverse order: gateways, workers, then the server and the databases.
 * Run as `node --import tsx`, not through the tsx CLI: its signal relay SIGKILLs a child that does
 * not acknowledge a Ctrl-C within 30 ms, which a loaded machine misses, cutting the shutdown short.
 */
const say = (line: string) => console.error(`[cluster] ${line}`);
if (process.argv.includes('--build-only')) {
  try {
    const started = Date.now();
    const built = await findOrBuildTemporalServer({ onProgress: say });
    say(
      `Temporal server ready in ${Math.round((Date.now() - started) / 1000)} s: ` +
        `${built.server}, ${built.sqlTool}, schemas in ${built.schemaDir}`,
    );
    process.exit(0);
  } catch (error) {
    process.exit(reportError(error));
  }
}

await runStackProcess({
  label: 'cluster',
  start: (config) =>
    startClusterStack({ config, given: process.env, say, onLine: (name, line) => console.error(`[${name}] ${line}`) }),
  banner: (stack, config, file) => {
    console.log('');
    console.log(`Tenant orchestrator cluster is up (task queue ${config.TEMPORAL_TASK_QUEUE}).`);
    console.log(
      `  Temporal:   ${stack.temporal.address} (server ${stack.temporal.historyShards} ` +
        `history shards on Postgres; log ${stack.temporal.serverLog})`,
    );
    console.log(`  Workers:    ${stack.workers.map((w) => `${w.name} pid ${w.pid}`).join(', ')}`);
    console.log(`  Gateways:   ${stack.gateways.map((g) => g.url).join(', ')}`);
    console.log(`  Platform:   ${stack.env.PLATFORM_BASE_URL}${stack.simulatorUrl ? ' (simulator)' : ''}`);
    console.log(`  Rotation:   ${stack.rotation}`);
    console.log(`Settings for another terminal are in ${file} (npx tenantctl ... uses them). Ctrl-C stops everything.`);
  },
  // A worker or gateway that dies on its own takes the cluster down: a half-running topology hides it.
  ended: async (stack) => {
    const first = await Promise.race(
      [...stack.workers, ...stack.gateways].map((p) => p.exited.then((code) => ({ name: p.name, code }))),
    );
    return `${first.name} exited on its own (${first.code})`;
  },
});
