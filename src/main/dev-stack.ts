import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../config.js';
import { reportError } from './report-error.js';
import { stackFile } from './stack/stack-file.js';
import { startStack, type RunningStack } from './stack/start-stack.js';

/**
 * `npm start`: the whole stack on embedded defaults — the Temporal dev server with its Web UI
 * (workflows kept in DATA_DIR/temporal.db), Postgres (embedded unless DATABASE_URL), migrations,
 * the platform simulator (unless PLATFORM_BASE_URL) and the worker. Ctrl-C stops all of it.
 */
const say = (line: string) => console.error(`[stack] ${line}`);
let stack: RunningStack | undefined;
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
  const config = loadConfig(process.env);
  stack = await startStack({ config, say });
  // Every setting a second shell needs, secrets included: readable by this user only (also when it existed).
  const file = stackFile(resolve(config.DATA_DIR));
  writeFileSync(file, JSON.stringify(stack.env, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
  console.log('');
  console.log(`Tenant orchestrator is up (task queue ${config.TEMPORAL_TASK_QUEUE}).`);
  if (stack.uiUrl) console.log(`  Temporal Web UI:  ${stack.uiUrl}`);
  console.log(`  Temporal:         ${stack.env.TEMPORAL_ADDRESS}`);
  console.log(
    `  Platform:         ${stack.env.PLATFORM_BASE_URL}${stack.simulatorUrl ? ' (simulator, seeded parent with 1,000 USD paid balance)' : ''}`,
  );
  console.log(
    `  Gateway:          ${stack.gatewayUrl} (trigger API /v1, webhooks, codec for the Web UI; API token in ${resolve(config.DATA_DIR, 'dev-gateway-token')})`,
  );
  console.log(`  Key rotation:     ${stack.rotation}`);
  console.log(
    `  Postgres:         ${config.DATABASE_URL ? 'DATABASE_URL' : `embedded, data in ${resolve(config.DATA_DIR, 'postgres')}`}`,
  );
  console.log('');
  console.log(`Settings for another terminal are in ${file}; onboard a first tenant from there:`);
  console.log('  npx tenantctl onboard --external-ref acme --name "Acme Inc" --funding 5000000 --wait');
  console.log('  npx tenantctl status acme');
  console.log('Ctrl-C stops everything.');
  await stack.workerDone;
  if (!stopping) {
    say('the worker stopped unexpectedly');
    await shutdown(1);
  }
} catch (error) {
  const code = reportError(error);
  await stack?.stop();
  process.exit(code);
}
