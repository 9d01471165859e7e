import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import { revealKey } from '../../src/client/keys/reveal-key.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { closeStatusQuery, type CloseStage } from '../../workflows/close-tenant-messages.js';
import { runCli, spawnCli } from '../harness/cli.js';
import { failureTypeOf } from '../harness/onboarding-checks.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';

describe('suspend, resume and close', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('lifecycle', {}, { lifecycle: { resumeBalanceFloorMicroUsd: '1000' } });
  });
  afterAll(async () => env?.close());

  async function onboard(externalRef: string, fundingMicroUsd = '5000') {
    const handle = await startOnboarding(
      env.client,
      { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd },
      { taskQueue: env.taskQueue },
    );
    return handle.result();
  }
  async function tenantToken(externalRef: string) {
    const vault = createVault(parseMasterKeys(env.secretsKeys));
    return (
      await revealKey(
        { pool: env.pool, vault },
        { externalRef, slot: 'default', operator: 'test', reason: 'test reads the token' },
      )
    ).token;
  }
  /** A workload of the tenant, using its own key. */
  async function createProject(token: string, name: string) {
    const response = await fetch(`${env.sim.apiBase}/projects/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name, region: 'eu-1' }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { data?: { id: string }; error?: { code: string } },
    };
  }
  function platformView(subaccountId: string) {
    const state = env.sim.state();
    return {
      status: state.subaccounts.find((s) => s.id === subaccountId)?.status,
      liveProjects: state.projects.filter((p) => p.subaccountId === subaccountId && p.status !== 'deleted').length,
      activeKeys: state.apiKeys.filter((k) => k.subaccountId === subaccountId && k.status === 'active').length,
    };
  }
  async function waitForCloseStage(workflowId: string, stage: CloseStage) {
    const handle = env.client.workflow.getHandle(workflowId);
    for (let i = 0; i < 400; i++) {
      const status = await handle.query(closeStatusQuery).catch(() => undefined);
      if (status?.stage === stage) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${workflowId} never reached ${stage}`);
  }

  it(
    'closes an operating tenant only after deleting its projects and revoking its ' + 'keys; a repeat is a no-op',
    async () => {
      await env.startOrchestratorWorker();
      const { subaccountId } = await onboard('close-ok');
      const token = await tenantToken('close-ok');
      for (const name of ['web', 'db', 'cache']) expect((await createProject(token, name)).status).toBe(201);
      const result = await (
        await startLifecycle(
          env.client,
          'close',
          { externalRef: 'close-ok', reason: 'customer left', operator: 'alice' },
          { taskQueue: env.taskQueue },
        )
      ).result();
      expect(result).toMatchObject({
        status: 'closed',
        alreadyClosed: false,
        projectsDeleted: 3,
        balanceLeftMicroUsd: '5000',
      });
      expect(platformView(subaccountId)).toEqual({ status: 'closed', liveProjects: 0, activeKeys: 0 });
      const { rows } = await env.pool.query(
        `SELECT status, closed_balance_micro_usd::text AS balance FROM tenants WHERE external_ref = 'close-ok'`,
      );
      expect(rows).toEqual([{ status: 'closed', balance: '5000' }]);
      const again = await (
        await startLifecycle(
          env.client,
          'close',
          { externalRef: 'close-ok', reason: 'again' },
          { taskQueue: env.taskQueue },
        )
      ).result();
      expect(again).toMatchObject({ status: 'closed', alreadyClosed: true });
      const { rows: history } = await env.pool.query(
        `SELECT count(*)::int AS n FROM audit_log WHERE external_ref = 'close-ok'`,
      );
      expect(history[0].n).toBeGreaterThan(5);
    },
  );

  it('round-trips suspend and resume, with the platform refusing the tenant while suspended', async () => {
    await onboard('pause-me');
    const token = await tenantToken('pause-me');
    await (
      await startLifecycle(
        env.client,
        'suspend',
        { externalRef: 'pause-me', reason: 'unpaid invoice' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    expect((await createProject(token, 'x')).body.error?.code).toBe('SUBACCOUNT_SUSPENDED');
    await (
      await startLifecycle(
        env.client,
        'resume',
        { externalRef: 'pause-me', reason: 'invoice paid' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    expect((await createProject(token, 'x')).status).toBe(201);
    const { rows } = await env.pool.query(
      `SELECT action, actor FROM audit_log WHERE external_ref = 'pause-me' AND action ` +
        `IN ('tenant.suspended', 'tenant.resumed') ORDER BY id`,
    );
    expect(rows.map((r) => r.action)).toEqual(['tenant.suspended', 'tenant.resumed']);
  });

  it('refuses a resume without a reason, or under the balance floor, and changes nothing', async () => {
    await onboard('poor', '10');
    await (
      await startLifecycle(
        env.client,
        'suspend',
        { externalRef: 'poor', reason: 'review' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    await expect(
      startLifecycle(env.client, 'resume', { externalRef: 'poor' }, { taskQueue: env.taskQueue }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    const cli = await runCli(['resume', 'poor', '--reason', ''], env.cliEnv);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/^error: reason: /m);
    // A run started without our records and the platform (as in the Web UI) meets the floor in its activity.
    const run = await startLifecycle(
      env.client,
      'resume',
      { externalRef: 'poor', reason: 'looks fine' },
      { taskQueue: env.taskQueue },
    );
    const refused = await run.result().catch((e: unknown) => e);
    expect(failureTypeOf(refused)).toBe('BALANCE_BELOW_FLOOR');
    // The operator's CLI goes through the gateway, which reads the wallet and refuses it before any run starts.
    const byCli = await runCli(['resume', 'poor', '--reason', 'looks fine'], env.cliEnv);
    expect(byCli.code, byCli.stderr).toBe(1);
    expect(byCli.stderr).toMatch(
      /^error: tenant poor is suspended: its wallet holds 10 micro-USD, below the resume floor of 1000 micro-USD/m,
    );
    expect((await env.client.workflow.getHandle(run.workflowId).describe()).runId).toBe(run.firstExecutionRunId);
    const { rows } = await env.pool.query(`SELECT status FROM tenants WHERE external_ref = 'poor'`);
    expect(rows).toEqual([{ status: 'suspended' }]);
  });

  it('closes a suspended tenant (resuming it for the cleanup calls)', async () => {
    const { subaccountId } = await onboard('close-suspended');
    expect((await createProject(await tenantToken('close-suspended'), 'left-behind')).status).toBe(201);
    await (
      await startLifecycle(
        env.client,
        'suspend',
        { externalRef: 'close-suspended', reason: 'fraud review' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    await (
      await startLifecycle(
        env.client,
        'close',
        { externalRef: 'close-suspended', reason: 'fraud confirmed' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    expect(platformView(subaccountId)).toEqual({ status: 'closed', liveProjects: 0, activeKeys: 0 });
  });

  it('finds and deletes a project a workload created during cleanup, before its key was revoked', async () => {
    const { subaccountId } = await onboard('racing-workload');
    const token = await tenantToken('racing-workload');
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/api-keys/*/revoke', mode: 'delay', delayMs: 1500 },
    ]);
    const handle = await startLifecycle(
      env.client,
      'close',
      { externalRef: 'racing-workload', reason: 'done', options: { pollInterval: '200ms' } },
      { taskQueue: env.taskQueue },
    );
    await waitForCloseStage(handle.workflowId, 'revoking_keys');
    expect((await createProject(token, 'sneaky')).status).toBe(201);
    await handle.result();
    await clearFaults(env.sim);
    expect(platformView(subaccountId)).toEqual({ status: 'closed', liveProjects: 0, activeKeys: 0 });
  });

  it('refuses an unknown external ref with a clear not-found error and no platform call', async () => {
    const before = env.sim.state().stats.requestsTotal;
    const error = await (
      await startLifecycle(
        env.client,
        'suspend',
        { externalRef: 'nobody-here', reason: 'test' },
        { taskQueue: env.taskQueue },
      )
    )
      .result()
      .catch((e: unknown) => e);
    expect(failureTypeOf(error)).toBe('TENANT_NOT_FOUND');
    expect(env.sim.state().stats.requestsTotal).toBe(before);
  });
});

// Its own world: no in-process worker, so killing the worker process really stops all work.
describe('close across a worker crash', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('lifecycle_crash');
  });
  afterAll(async () => env?.close());

  it('finishes a half-done cleanup after the worker is killed mid-cleanup', async () => {
    const worker = spawnCli(['worker'], env.cliEnv);
    await worker.ready;
    const { subaccountId } = await (
      await startOnboarding(
        env.client,
        { externalRef: 'half-cleaned', name: 'Half Cleaned' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    const vault = createVault(parseMasterKeys(env.secretsKeys));
    const { token } = await revealKey(
      { pool: env.pool, vault },
      { externalRef: 'half-cleaned', slot: 'default', operator: 'test', reason: 'test reads the token' },
    );
    for (const name of ['a', 'b', 'c', 'd']) {
      const response = await fetch(`${env.sim.apiBase}/projects/create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, region: 'eu-1' }),
      });
      expect(response.status).toBe(201);
    }
    const live = () =>
      env.sim.state().projects.filter((p) => p.subaccountId === subaccountId && p.status !== 'deleted').length;
    await setFaults(env.sim, [{ method: '*', path: '/projects/*/delete', mode: 'delay', delayMs: 700 }]);
    const handle = await startLifecycle(
      env.client,
      'close',
      { externalRef: 'half-cleaned', reason: 'done', options: { pollInterval: '200ms' } },
      { taskQueue: env.taskQueue },
    );
    while (live() > 2) await new Promise((r) => setTimeout(r, 25));
    worker.child.kill('SIGKILL');
    await new Promise((r) => worker.child.once('exit', r));
    expect(live()).toBeGreaterThan(0);
    await clearFaults(env.sim);
    const second = spawnCli(['worker'], env.cliEnv);
    await second.ready;
    try {
      expect(await handle.result()).toMatchObject({ status: 'closed' });
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
    const state = env.sim.state();
    expect(state.subaccounts.find((s) => s.id === subaccountId)?.status).toBe('closed');
    expect(live()).toBe(0);
    expect(state.apiKeys.filter((k) => k.subaccountId === subaccountId && k.status === 'active')).toHaveLength(0);
  });
});
