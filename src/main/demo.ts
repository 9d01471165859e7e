import { existsSync, readFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../config/index.js';
import { reportError } from './report-error.js';
import { stackFile } from './stack/stack-file.js';
import { startOnboarding } from '../client/tenants/start-onboarding.js';
import { createPool } from '../db/pool.js';
import { listAuditForTenant } from '../db/audit-store.js';
import type { SimStateSnapshot } from '../sim/index.js';
import { startStack, type RunningStack } from './stack/start-stack.js';
import { dataConverterOf } from './wiring/data-converter.js';
import { TEMPORAL_ADDRESS_FALLBACK } from '../config/defaults.js';

/**
 * `npm run demo`: onboards a few tenants — one of them through lost responses (the platform commits
 * the transfer and the key, then drops the connection) — and prints what happened, checked against
 * the simulator's own books. Uses the running `npm start` stack when there is one, else a throwaway.
 */
const say = (line: string) => console.error(`[demo] ${line}`);

async function main() {
  // The demo prints its own story; the worker's warnings about the injected faults would drown it.
  const base = loadConfig({ LOG_LEVEL: 'error', ...process.env });
  let stack: RunningStack | undefined;
  let env: Record<string, string>;
  if (existsSync(stackFile(base.DATA_DIR))) {
    env = JSON.parse(readFileSync(stackFile(base.DATA_DIR), 'utf8')) as Record<string, string>;
    say('using the running stack (npm start)');
  } else {
    say('no running stack: starting a throwaway one');
    stack = await startStack({ config: base, ephemeral: true, say });
    env = stack.env;
  }
  const config = loadConfig({ ...process.env, ...env });
  const simulator = env.SIMULATOR_URL;
  if (!simulator) throw new Error('the demo injects faults, so it needs the simulator (unset PLATFORM_BASE_URL)');
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS ?? TEMPORAL_ADDRESS_FALLBACK });
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...(dataConverterOf(config) ? { dataConverter: dataConverterOf(config)! } : {}),
  });
  const pool = createPool(config.DATABASE_URL!, { max: 2 });
  const run = Date.now().toString(36);
  const tenants = [
    { externalRef: `demo-${run}-plain`, name: 'Plain Sailing Ltd', fundingMicroUsd: '5000000', lose: [] as string[] },
    { externalRef: `demo-${run}-nofund`, name: 'Free Tier GmbH', lose: [] as string[] },
    {
      externalRef: `demo-${run}-lossy`,
      name: 'Lossy Networks Inc',
      fundingMicroUsd: '2500000',
      lose: ['/subaccounts/*/wallet/transfers', '/subaccounts/*/api-keys/create'],
    },
  ];
  try {
    for (const { lose, ...input } of tenants) {
      if (lose.length) {
        say(`${input.externalRef}: the platform will commit, then drop the response of: ${lose.join(', ')}`);
        await fetch(`${simulator}/__sim/faults`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            rules: lose.map((path) => ({ method: 'POST', path, mode: 'drop-after-commit', count: 1 })),
          }),
        });
      }
      const started = Date.now();
      const handle = await startOnboarding(
        client,
        { ...input, options: { reconcileInterval: '1s' } },
        { taskQueue: config.TEMPORAL_TASK_QUEUE },
      );
      const result = await handle.result();
      await fetch(`${simulator}/__sim/faults`, { method: 'DELETE' });
      say(
        `${input.externalRef}: ${result.status} in ${Date.now() - started} ms — ` +
          `sub-account ${result.subaccountId}, key ${result.fingerprint}`,
      );
    }
    const state = (await (await fetch(`${simulator}/__sim/state`)).json()) as SimStateSnapshot;
    console.log(
      '\nexternal ref                      sub-accounts  transfers  active keys  revoked keys   (on the platform)',
    );
    for (const tenant of tenants) {
      const subs = state.subaccounts.filter((s) => s.externalRef === tenant.externalRef);
      const ids = new Set(subs.map((s) => s.id));
      const transfers = state.transfers.filter((t) => ids.has(t.subaccountId));
      const keys = state.apiKeys.filter((k) => k.subaccountId && ids.has(k.subaccountId));
      console.log(
        tenant.externalRef.padEnd(34) +
          String(subs.length).padEnd(14) +
          String(transfers.length).padEnd(11) +
          String(keys.filter((k) => k.status === 'active').length).padEnd(13) +
          String(keys.filter((k) => k.status === 'revoked').length),
      );
    }
    const lossy = tenants[2]!.externalRef;
    console.log(`\naudit trail of ${lossy}:`);
    for (const entry of await listAuditForTenant(pool, lossy))
      console.log(`  ${entry.action.padEnd(24)} ${entry.subject ?? ''}`);
    console.log(
      '\nThe lost transfer was settled under its original idempotency key (one debit); ' +
        'the key whose response was lost was revoked as an orphan and a new one issued.',
    );
  } finally {
    await pool.end();
    await connection.close();
    await stack?.stop();
  }
}

main().catch((error: unknown) => {
  process.exitCode = reportError(error);
});
