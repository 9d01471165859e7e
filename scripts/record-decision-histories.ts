/**
 * Records the histories in test/histories/decisions/: runs in which an operator's decision reached the
 * run as an Update, for the replay test that keeps the decision paths deterministic (replay-decisions.test).
 * The plain histories (scripts/record-histories.ts) hold no decision. Run after a deliberate workflow change:
 *   npm run histories:record-decisions
 * A lost transfer response with an unreadable wallet (simulator faults) sends onboarding and a top-up to
 * needs_operator; a resolveTransfer verdict (checked against the approval policy: none gates it here) settles
 * each. A top-up whose parent cannot pay waits for parentFunded. Payloads are unencrypted and hold no secret.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { loadConfig } from '../src/config/index.js';
import { startOnboarding } from '../src/client/tenants/start-onboarding.js';
import { startTopUp } from '../src/client/money/start-top-up.js';
import { findOrBuildTemporalCli } from '../src/infra/temporal-cli.js';
import { startStack } from '../src/main/stack/start-stack.js';
import { DEFAULT_PARENT_ID } from '../src/sim/index.js';
import { currentWaitQuery } from '../workflows/waits-messages.js';

const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1h', unknownTransferDeadline: '1s' };
const LOST_TRANSFER = [
  { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
  { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
];
const verdict = { outcome: 'applied', operator: 'recording', reason: 'seen on the wallet' };

const config = loadConfig({ ...process.env, PAYLOAD_CODEC: 'off', LOG_LEVEL: 'error' });
const stack = await startStack({ config, ephemeral: true, say: (line) => console.error(`[record] ${line}`) });
const connection = await Connection.connect({ address: stack.env.TEMPORAL_ADDRESS! });
const client = new Client({ connection });
const taskQueue = config.TEMPORAL_TASK_QUEUE;
const sim = stack.env.SIMULATOR_URL!;
const ids: Record<string, string> = {};

async function simCall(method: string, path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${sim}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
}

async function waitFor(handle: WorkflowHandle, stage: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const wait = await handle.query(currentWaitQuery).catch(() => null);
    if (wait?.stage === stage && wait.decisions.length > 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${handle.workflowId} never waited in ${stage}`);
}

try {
  // Onboarding: its funding transfer lost, an operator's verdict settles it.
  await simCall('POST', '/__sim/faults', { rules: LOST_TRANSFER });
  const onboarding = await startOnboarding(
    client,
    { externalRef: 'rec-update', name: 'Recorded Update', fundingMicroUsd: '900', options: FAST },
    { taskQueue },
  );
  await waitFor(onboarding, 'needs_operator');
  await simCall('DELETE', '/__sim/faults');
  await onboarding.executeUpdate('resolveTransfer', { args: [verdict] });
  await onboarding.result();
  ids['onboardTenant-update'] = onboarding.workflowId;

  // A top-up of that tenant, lost the same way and settled the same way.
  await simCall('POST', '/__sim/faults', { rules: LOST_TRANSFER });
  const topUp = await startTopUp(
    client,
    { externalRef: 'rec-update', idempotencyKey: 'op-1', amountMicroUsd: '500', reason: 'recording', options: FAST },
    { taskQueue },
  );
  await waitFor(topUp, 'needs_operator');
  await simCall('DELETE', '/__sim/faults');
  await topUp.executeUpdate('resolveTransfer', { args: [verdict] });
  await topUp.result();
  ids['fundTenant-update'] = topUp.workflowId;

  // A top-up the parent cannot pay: it waits for parentFunded, sent once the parent is paid.
  await simCall('POST', `/__sim/parents/${DEFAULT_PARENT_ID}/balance`, { paidMicroUsd: '1' });
  const broke = await startTopUp(
    client,
    { externalRef: 'rec-update', idempotencyKey: 'funds-1', amountMicroUsd: '700', reason: 'recording', options: FAST },
    { taskQueue },
  );
  await waitFor(broke, 'waiting_for_parent_funds');
  await simCall('POST', `/__sim/parents/${DEFAULT_PARENT_ID}/balance`, { paidMicroUsd: '100000000' });
  await broke.executeUpdate('parentFunded', { args: [{ operator: 'recording', reason: 'wired funds' }] });
  await broke.result();
  ids['fundTenant-parentFunded'] = broke.workflowId;

  const cli = await findOrBuildTemporalCli({ cliPath: config.TEMPORAL_CLI_PATH });
  if (!cli) throw new Error('no temporal CLI to export histories with');
  for (const [name, workflowId] of Object.entries(ids)) {
    const json = execFileSync(
      cli,
      ['workflow', 'show', '--address', stack.env.TEMPORAL_ADDRESS!, '--workflow-id', workflowId, '--output', 'json'],
      { encoding: 'utf8' },
    );
    const file = `test/histories/decisions/${name}.json`;
    writeFileSync(file, json.endsWith('\n') ? json : `${json}\n`);
    console.error(`[record] ${file}: ${(JSON.parse(json) as { events: unknown[] }).events.length} events`);
  }
  writeFileSync('test/histories/decisions/index.json', `${JSON.stringify(ids, null, 2)}\n`);
} finally {
  await connection.close();
  await stack.stop();
}
