import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { startTopUp } from '../../src/client/money/start-top-up.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { DEFAULT_PARENT_ID, DEFAULT_SEED } from '../../src/sim/index.js';
import { closeStatusQuery } from '../../workflows/close-tenant-messages.js';
import type { LooseJson } from '../harness/sim-calls.js';
import {
  clearFaults,
  createOrchestratorEnv,
  setFaults,
  waitForOnboardingStage,
  type OrchestratorEnv,
} from '../harness/onboarding-env.js';
import { startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';
import { waitFor } from '../harness/rotation-env.js';
import { waitForTopUpStage } from '../harness/top-up-env.js';

/**
 * The operator-decision routes tenantctl's parent-funded, resolve-transfer and close --cancel use
 * (permission runs.decide): an operator's decision reaches the waiting run, which then completes; a
 * backend or a viewer is 403 and nothing is written or sent. A real worker and gateway.
 */
const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1h', unknownTransferDeadline: '2s' };
const olga = generateOperator('olga', 'operator');
const bea = generateOperator('bea', 'backend');
const vic = generateOperator('vic', 'viewer');

describe('decision routes (runs.decide)', () => {
  let env: OrchestratorEnv;
  let gateway: OperatorGateway;
  const seed = { ...DEFAULT_SEED, parents: DEFAULT_SEED.parents.map((p) => ({ ...p, paidBalanceMicroUsd: '100' })) };
  const post = async (path: string, token: string, body: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as LooseJson };
  };
  const setParentBalance = (paidMicroUsd: string) =>
    fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paidMicroUsd }),
    });
  const auditCount = async () =>
    (await env.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]!.n;
  const actorsOf = async (action: string) =>
    (await env.pool.query(`SELECT actor FROM audit_log WHERE action = $1`, [action])).rows.map((r) => r.actor);

  beforeAll(async () => {
    env = await createOrchestratorEnv('decision-routes', { seed, choices: { walletShowsTransfers: false } });
    await env.startOrchestratorWorker();
    gateway = await startOperatorGateway(env, { entries: [olga.entry, bea.entry, vic.entry] });
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('parent-funded for an onboarding: a backend is 403 and nothing is sent; an operator unblocks it to completion', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'dr-broke', name: 'Broke', fundingMicroUsd: '5000', options: FAST },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, 'onboard:dr-broke', 'waiting_for_parent_funds');
    await setParentBalance('100000000');
    const before = { audit: await auditCount(), events: (await handle.fetchHistory()).events!.length };
    const refused = await post('/v1/tenants/dr-broke/decisions/parent-funded', bea.token, { reason: 'funds wired' });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('FORBIDDEN');
    expect(await auditCount()).toBe(before.audit);
    expect((await handle.fetchHistory()).events!.length).toBe(before.events);

    const typed = await post('/v1/tenants/dr-broke/decisions/parent-funded', olga.token, {
      reason: 'funds wired',
      operator: 'bea',
    });
    expect(typed.status).toBe(400);
    expect(typed.json.error.fields).toEqual(['operator']);

    const ok = await post('/v1/tenants/dr-broke/decisions/parent-funded', olga.token, { reason: 'funds wired' });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.json.data).toMatchObject({ workflowId: 'onboard:dr-broke', decision: 'parentFunded' });
    expect(await handle.result()).toMatchObject({ status: 'active' });
  });

  it('parent funded, parent-wide: a viewer is 403 with nothing written; an operator clears the state and the waiting top-up completes', async () => {
    await setParentBalance('10');
    const topUp = await startTopUp(
      env.client,
      { externalRef: 'dr-broke', idempotencyKey: 'dr-1', amountMicroUsd: '5000', requestedBy: 'test', options: FAST },
      { taskQueue: env.taskQueue },
    );
    await waitForTopUpStage(env, topUp.workflowId, 'waiting_for_parent_funds');
    await setParentBalance('100000000');
    // The sweep finds the run by its search attribute: wait until the list shows it.
    await waitFor(async () => {
      for await (const run of env.client.workflow.list({
        query: `WorkflowType = 'fundTenant' AND ExecutionStatus = 'Running' AND TenantStatus = 'waiting_for_parent_funds'`,
      }))
        if (run.workflowId === topUp.workflowId) return true;
      return undefined;
    }, 'the waiting top-up to be listed');

    const before = await auditCount();
    const refused = await post('/v1/parent/funded', vic.token, { reason: 'wired the parent' });
    expect(refused.status).toBe(403);
    expect(await auditCount()).toBe(before);
    const { rows } = await env.pool.query(`SELECT insufficient_since IS NOT NULL AS set FROM funding_parent`);
    expect(rows).toEqual([{ set: true }]);

    const ok = await post('/v1/parent/funded', olga.token, { reason: 'wired the parent' });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.json.data).toMatchObject({ stateCleared: true, retried: [topUp.workflowId] });
    expect((await topUp.result()).state).toBe('succeeded');
    expect((await actorsOf('parent.funded')).filter((actor) => actor.startsWith('operator:'))).toEqual([
      'operator:olga',
    ]);
  });

  it('resolve-transfer: a backend is 403 and the run still waits; an operator settles it and the run completes', async () => {
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
    ]);
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'dr-lost', name: 'Lost', fundingMicroUsd: '900', options: FAST },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, 'onboard:dr-lost', 'needs_operator');
    await clearFaults(env.sim);
    const verdict = { outcome: 'applied', reason: 'seen on the wallet' };
    const before = { audit: await auditCount(), events: (await handle.fetchHistory()).events!.length };
    const refused = await post('/v1/tenants/dr-lost/decisions/resolve-transfer', bea.token, verdict);
    expect(refused.status).toBe(403);
    const typo = await post('/v1/tenants/dr-lost/decisions/resolve-transfer', olga.token, {
      ...verdict,
      outcome: 'Applied',
    });
    expect(typo.status).toBe(400);
    expect(typo.json.error.fields).toEqual(['outcome']);
    expect(await auditCount()).toBe(before.audit);
    expect((await handle.fetchHistory()).events!.length).toBe(before.events);

    const ok = await post('/v1/tenants/dr-lost/decisions/resolve-transfer', olga.token, verdict);
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.json.data).toMatchObject({
      workflowId: 'onboard:dr-lost',
      decision: 'resolveTransfer',
      transferState: 'succeeded',
    });
    expect(await handle.result()).toMatchObject({ status: 'active' });
    expect(await actorsOf('transfer.resolved_by_operator')).toEqual(['operator:olga']);

    // Nothing waits any more: a refusal naming why, nothing sent.
    const late = await post('/v1/tenants/dr-lost/decisions/resolve-transfer', olga.token, verdict);
    expect(late.status).toBe(404);
    expect(late.json.error.code).toBe('RUN_NOT_FOUND');
  });

  it('close/cancel: a backend is 403 and the window runs on; an operator cancels and the run completes', async () => {
    await (
      await startOnboarding(env.client, { externalRef: 'dr-close', name: 'Close' }, { taskQueue: env.taskQueue })
    ).result();
    const close = await startLifecycle(
      env.client,
      'close',
      { externalRef: 'dr-close', reason: 'customer left', operator: 'ops', after: '1h' },
      { taskQueue: env.taskQueue },
    );
    await waitFor(
      async () => ((await close.query(closeStatusQuery)).stage === 'scheduled' ? true : undefined),
      'the close window',
    );
    const before = await auditCount();
    const refused = await post('/v1/tenants/dr-close/close/cancel', bea.token, { reason: 'customer stays' });
    expect(refused.status).toBe(403);
    expect(await auditCount()).toBe(before);
    expect((await close.query(closeStatusQuery)).stage).toBe('scheduled');

    const ok = await post('/v1/tenants/dr-close/close/cancel', olga.token, { reason: 'customer stays' });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.json.data).toMatchObject({ externalRef: 'dr-close', cancelled: true, stage: 'close_cancelled' });
    expect(await close.result()).toMatchObject({ status: 'close_cancelled' });
    expect(await actorsOf('tenant.close_cancelled')).toEqual(['operator:olga']);
  });
});
