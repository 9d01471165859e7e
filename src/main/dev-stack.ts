import { resolve } from 'node:path';
import { runStackProcess } from './stack/run-stack-process.js';
import { startStack } from './stack/start-stack.js';

/**
 * `npm start`: the whole stack on embedded defaults — the Temporal dev server with its Web UI
 * (workflows kept in DATA_DIR/temporal.db), Postgres (embedded unless DATABASE_URL), migrations,
 * the platform simulator (unless PLATFORM_BASE_URL) and the worker. Ctrl-C stops all of it.
 */
await runStackProcess({
  label: 'stack',
  start: (config, say) => startStack({ config, say }),
  banner: (stack, config, file) => {
    console.log('');
    console.log(`Tenant orchestrator is up (task queue ${config.TEMPORAL_TASK_QUEUE}).`);
    if (stack.uiUrl) console.log(`  Temporal Web UI:  ${stack.uiUrl}`);
    console.log(`  Temporal:         ${stack.env.TEMPORAL_ADDRESS}`);
    console.log(
      `  Platform:         ${stack.env.PLATFORM_BASE_URL}` +
        (stack.simulatorUrl ? ' (simulator, seeded parent with 1,000 USD paid balance)' : ''),
    );
    console.log(
      `  Gateway:          ${stack.gatewayUrl} (trigger API /v1, webhooks, codec for ` +
        `the Web UI; API token in ${resolve(config.DATA_DIR, 'dev-gateway-token')})`,
    );
    console.log(`  Key rotation:     ${stack.rotation}`);
    console.log(
      '  Postgres:         ' +
        (config.DATABASE_URL ? 'DATABASE_URL' : `embedded, data in ${resolve(config.DATA_DIR, 'postgres')}`),
    );
    console.log('');
    console.log(`Settings for another terminal are in ${file}; onboard a first tenant from there:`);
    console.log('  npx tenantctl onboard --external-ref acme --name "Acme Inc" --funding 5000000 --wait');
    console.log('  npx tenantctl status acme');
    console.log('Ctrl-C stops everything.');
  },
  ended: async (stack) => {
    await stack.workerDone;
    return 'the worker stopped unexpectedly';
  },
});
