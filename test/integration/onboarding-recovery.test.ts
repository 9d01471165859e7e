import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { DEFAULT_PARENT_ID, DEFAULT_SEED } from '../../src/sim/index.js';
import {
  clearFaults,
  createOrchestratorEnv,
  setFaults,
  waitForOnboardingStage,
  type OrchestratorEnv,
} from '../harness/onboarding-env.js';
import { expectExactlyOnce } from '../harness/onboarding-checks.js';

const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '30s', unknownTransferDeadline: '2s' };

async function admin(env: OrchestratorEnv, path: string, body: unknown) {
  const response = await fetch(`${env.sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

async function waitUntil(check: () => boolean, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A platform that forgets idempotency keys after one second and lists no transfers in the wallet:
// after a lost response, a retry under the same key alone would create a second tenant or debit twice.
describe('onboarding on a forgetful platform', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('forgetful', {
      seed: { ...DEFAULT_SEED, idempotencyRetentionSeconds: 1 },
      choices: { walletShowsTransfers: false },
    });
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('finds the sub-account by external ref before any new create once the platform forgot the key', async () => {
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/create', mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: '/subaccounts', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
    ]);
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'forgot-create', name: 'Forgot Create' },
      { taskQueue: env.taskQueue },
    );
    await waitUntil(
      () => env.sim.state().subaccounts.some((s) => s.externalRef === 'forgot-create'),
      'the dropped create to commit',
    );
    await admin(env, '/__sim/clock/advance', { seconds: 30 });
    await clearFaults(env.sim);
    await handle.result();
    expectExactlyOnce(env.sim.state(), 'forgot-create', { amountMicroUsd: null });
  });

  it('settles a lost transfer from the wallet balance, never by a second debit', async () => {
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
    ]);
    const handle = await startOnboarding(
      env.client,
      {
        externalRef: 'forgot-xfer',
        name: 'Forgot Transfer',
        fundingMicroUsd: '4200',
        options: { ...FAST, unknownTransferDeadline: '1m' },
      },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, 'onboard:forgot-xfer', 'reconciling_transfer');
    await admin(env, '/__sim/clock/advance', { seconds: 30 });
    await clearFaults(env.sim);
    await handle.result();
    expectExactlyOnce(env.sim.state(), 'forgot-xfer', { amountMicroUsd: '4200' });
    const { rows } = await env.pool.query(
      `SELECT state, resolution FROM transfer_intents WHERE external_ref = 'forgot-xfer'`,
    );
    expect(rows).toEqual([{ state: 'succeeded', resolution: 'wallet-balance' }]);
  });

  it('asks an operator when a transfer stays unknown past its deadline, and applies the verdict once', async () => {
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
    ]);
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'needs-op', name: 'Needs Operator', fundingMicroUsd: '900', options: FAST },
      { taskQueue: env.taskQueue },
    );
    const waiting = await waitForOnboardingStage(env, 'onboard:needs-op', 'needs_operator');
    expect(waiting.waitingFor).toMatch(/resolveTransfer/);
    const { rows: before } = await env.pool.query(`SELECT state FROM transfer_intents WHERE external_ref = 'needs-op'`);
    expect(before).toEqual([{ state: 'needs_operator' }]);
    await clearFaults(env.sim);
    await handle.executeUpdate('resolveTransfer', {
      args: [{ outcome: 'applied', operator: 'bob', reason: 'seen on the wallet' }],
    });
    await handle.result();
    expectExactlyOnce(env.sim.state(), 'needs-op', { amountMicroUsd: '900' });
    const { rows } = await env.pool.query(
      `SELECT actor FROM audit_log WHERE external_ref = 'needs-op' AND action = 'transfer.resolved_by_operator'`,
    );
    expect(rows).toEqual([{ actor: 'operator:bob' }]);
  });
});

describe('onboarding when the parent cannot pay', () => {
  let env: OrchestratorEnv;
  const seed = { ...DEFAULT_SEED, parents: DEFAULT_SEED.parents.map((p) => ({ ...p, paidBalanceMicroUsd: '100' })) };
  beforeAll(async () => {
    env = await createOrchestratorEnv('insufficient', { seed, choices: { replay: 'conflict' } });
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('waits visibly on INSUFFICIENT_BALANCE and continues once told parentFunded', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'broke-1', name: 'Broke One', fundingMicroUsd: '5000', options: FAST },
      { taskQueue: env.taskQueue },
    );
    const waiting = await waitForOnboardingStage(env, 'onboard:broke-1', 'waiting_for_parent_funds');
    expect(waiting.waitingFor).toMatch(/parentFunded/);
    expect(waiting.key.state).toBe('verified');
    await admin(env, `/__sim/parents/${DEFAULT_PARENT_ID}/balance`, { paidMicroUsd: '10000' });
    await handle.executeUpdate('parentFunded', { args: [{ operator: 'carol', reason: 'wired funds' }] });
    const result = await handle.result();
    expect(result.status).toBe('active');
    expectExactlyOnce(env.sim.state(), 'broke-1', { amountMicroUsd: '5000' });
    expect(env.sim.state().parents[0]!.paidBalanceMicroUsd).toBe('5000');
  });

  it('leaves clean records when a waiting onboarding is cancelled', async () => {
    await admin(env, `/__sim/parents/${DEFAULT_PARENT_ID}/balance`, { paidMicroUsd: '1' });
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'broke-2', name: 'Broke Two', fundingMicroUsd: '5000', options: FAST },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, 'onboard:broke-2', 'waiting_for_parent_funds');
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    const { rows: tenants } = await env.pool.query(`SELECT status FROM tenants WHERE external_ref = 'broke-2'`);
    expect(tenants).toEqual([{ status: 'cancelled' }]);
    const { rows: intents } = await env.pool.query(
      `SELECT state, failure_code FROM transfer_intents WHERE external_ref = 'broke-2'`,
    );
    expect(intents).toEqual([{ state: 'cancelled', failure_code: 'INSUFFICIENT_BALANCE' }]);
    expect(env.sim.state().transfers.filter((t) => t.amountMicroUsd === '5000')).toHaveLength(1);
  });

  it('recovers a lost create on a platform that answers replays with a conflict', async () => {
    await setFaults(env.sim, [{ method: 'POST', path: '/subaccounts/create', mode: 'drop-after-commit', count: 1 }]);
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'conflict-replay', name: 'Conflict Replay' },
      { taskQueue: env.taskQueue },
    );
    await handle.result();
    await clearFaults(env.sim);
    expectExactlyOnce(env.sim.state(), 'conflict-replay', { amountMicroUsd: null });
  });
});
