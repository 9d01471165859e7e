import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { DEFAULT_PARENT_ID, DEFAULT_SEED } from '../../src/sim/index.js';
import { closeStatusQuery } from '../../workflows/close-tenant-messages.js';
import { runCli } from '../harness/cli.js';
import type { LooseJson } from '../harness/sim-calls.js';
import { createOrchestratorEnv, waitForOnboardingStage, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';
import { waitFor } from '../harness/rotation-env.js';

/**
 * The one decision surface (issue 46): `POST /v1/runs/:run/decisions/:decision`, the run named by its workflow id,
 * as a signup backend's or an operator's HTTP client sends it and as `tenantctl decide` does (a child process).
 * Its permission is the run kind's; a refusal (wrong role, unknown field, run or decision) writes nothing and sends
 * nothing; an accepted decision lets the run complete. A real worker and gateway, only the platform simulated.
 */
const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1h', unknownTransferDeadline: '2s' };
const olga = generateOperator('olga', 'operator');
const bea = generateOperator('bea', 'backend');

describe('POST /v1/runs/:run/decisions/:decision', () => {
  let env: OrchestratorEnv;
  let gateway: OperatorGateway;
  const seed = { ...DEFAULT_SEED, parents: DEFAULT_SEED.parents.map((p) => ({ ...p, paidBalanceMicroUsd: '100' })) };
  const post = async (path: string, token: string | undefined, body: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as LooseJson };
  };
  const auditCount = async () =>
    (await env.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]!.n;

  beforeAll(async () => {
    env = await createOrchestratorEnv('run-decisions', { seed, choices: { walletShowsTransfers: false } });
    await env.startOrchestratorWorker();
    gateway = await startOperatorGateway(env, { entries: [olga.entry, bea.entry] });
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('takes parent-funded for a waiting onboarding by its workflow id; refusals send and write nothing', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'rd-broke', name: 'Broke', fundingMicroUsd: '5000', options: FAST },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, 'onboard:rd-broke', 'waiting_for_parent_funds');
    await fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paidMicroUsd: '100000000' }),
    });
    const url = '/v1/runs/onboard:rd-broke/decisions/parent-funded';
    const before = { audit: await auditCount(), events: (await handle.fetchHistory()).events!.length };

    // No token: 401 before the run is even read (a 404 would say which runs exist).
    expect((await post('/v1/runs/nonsense/decisions/abort', undefined, {})).status).toBe(401);
    // A backend lacks runs.decide, the permission of an onboarding's decisions.
    const forbidden = await post(url, bea.token, { reason: 'funds wired' });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error.message).toMatch(/runs\.decide/);
    // One body parser: a field the decision does not take is named; a reason is required.
    const unknown = await post(url, olga.token, { reason: 'funds wired', outcome: 'applied' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['outcome'] });
    const noReason = await post(url, olga.token, {});
    expect(noReason.status).toBe(400);
    expect(noReason.json.error.fields).toEqual(['reason']);
    const someoneElse = await post(url, olga.token, { reason: 'funds wired', operator: 'bea' });
    expect(someoneElse.json.error.fields).toEqual(['operator']);
    // A decision this kind does not take, and a run no kind names: 404 naming the choices.
    const wrongDecision = await post('/v1/runs/onboard:rd-broke/decisions/revoke-anyway', olga.token, {
      reason: 'x y z',
    });
    expect(wrongDecision.status).toBe(404);
    expect(wrongDecision.json.error.message).toMatch(/use one of resolve-transfer, parent-funded/);
    const wrongRun = await post('/v1/runs/onboarding-rd-broke/decisions/parent-funded', olga.token, {
      reason: 'funds wired',
    });
    expect(wrongRun.status).toBe(404);
    expect(wrongRun.json.error).toMatchObject({ code: 'RUN_NOT_FOUND' });
    expect(wrongRun.json.error.message).toMatch(/onboard:<ref>.*rotate:<ref>:<slot>/);
    expect(await auditCount()).toBe(before.audit);
    expect((await handle.fetchHistory()).events!.length).toBe(before.events);

    const ok = await post(url, olga.token, { reason: 'funds wired' });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.json.data).toMatchObject({ workflowId: 'onboard:rd-broke', decision: 'parent-funded' });
    expect(await handle.result()).toMatchObject({ status: 'active' });
    // Nothing waits any more: 404, nothing sent.
    const late = await post(url, olga.token, { reason: 'funds wired' });
    expect(late.status).toBe(404);
    expect(late.json.error.code).toBe('RUN_NOT_FOUND');
  });

  it('tenantctl decide cancels a delayed close by its run id, and the close run completes', async () => {
    await (
      await startOnboarding(env.client, { externalRef: 'rd-close', name: 'Close' }, { taskQueue: env.taskQueue })
    ).result();
    const close = await startLifecycle(
      env.client,
      'close',
      { externalRef: 'rd-close', reason: 'customer left', operator: 'ops', after: '1h' },
      { taskQueue: env.taskQueue },
    );
    await waitFor(
      async () => ((await close.query(closeStatusQuery)).stage === 'scheduled' ? true : undefined),
      'the close window',
    );
    const asOlga = { TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: olga.token };
    const refused = await runCli(['decide', 'close:rd-close', 'cancel-close'], asOlga);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: reason: /);
    expect((await close.query(closeStatusQuery)).stage).toBe('scheduled');

    const cli = await runCli(['decide', 'close:rd-close', 'cancel-close', '--reason', 'customer stays'], asOlga);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/^cancel-close accepted by close:rd-close \(now close_cancelled\)/);
    expect(await close.result()).toMatchObject({ status: 'close_cancelled' });
    const { rows } = await env.pool.query(`SELECT actor FROM audit_log WHERE action = 'tenant.close_cancelled'`);
    expect(rows.map((r) => r.actor)).toEqual(['operator:olga']);
  });
});
