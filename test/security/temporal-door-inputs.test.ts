/**
 * Each workflow input holds the server's rules whichever door it came through (issue 45): started straight in
 * Temporal (the Web UI's Start Workflow, any Temporal client) a run with a bad input fails at once with
 * INVALID_INPUT naming the field, and the same input over `/v1` is refused with one 400 that says the same thing,
 * making nothing. The rules: durations a Temporal timer holds, the plans' key limit (PLATFORM_TENANT_KEY_LIMIT,
 * the worker's), and the fields only a run's own continuation sets (a fleet run's cursor `after` and `totals`),
 * which made every run of a schedule skip the tenants before "zzz".
 */
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlan } from '../../src/client/plans/plans.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import {
  AUTO_TOP_UP_SCHEDULE_ID,
  autoTopUpSweepWorkflowId,
  fleetScheduleId,
  onboardingWorkflowId,
  planConvergenceWorkflowId,
  planRolloutWorkflowId,
} from '../../src/domain/ids.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { listenGatewayOver } from '../harness/gateway-app.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { callAs } from '../harness/operator-gateway.js';
import { refusalOf } from '../harness/refused-run.js';

const backend = generateOperator('doorin-backend', 'backend');
const admin = generateOperator('doorin-admin', 'admin');
const parsed = parseOperatorList([backend.entry, admin.entry].join(','));
if (!parsed.ok) throw new Error(parsed.problems.join('; '));

/** The worker's and the gateway's PLATFORM_TENANT_KEY_LIMIT: a plan may have one slot. */
const KEY_LIMIT = 2;
const CARRIED = 'set only by a run that continues as new, never by a caller';

describe('workflow inputs started straight in Temporal hold the rules of every other door', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const start = (client: Client, workflowType: string, workflowId: string, input: unknown) =>
    client.workflow.start(workflowType, { taskQueue: env.taskQueue, workflowId, args: [input] });
  const scheduleExists = (id: string) =>
    env.client.schedule
      .getHandle(id)
      .describe()
      .then(
        () => true,
        () => false,
      );

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-door-inputs', {}, { platformTenantKeyLimit: KEY_LIMIT });
    await env.startOrchestratorWorker();
    ({ gateway, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      tenantKeyLimit: KEY_LIMIT,
    }));
    // Made under a higher limit (another configuration, or before the limit was lowered): two slots.
    await createPlan(
      env.pool,
      { name: 'wide', keySlots: ['default', 'ci'], initialFundingMicroUsd: '1000000' },
      { actor: 'test', tenantKeyLimit: 3 },
    );
    await (
      await startOnboarding(
        env.client,
        { externalRef: 'doorin-t', name: 'Tenant', fundingMicroUsd: '5000' },
        { taskQueue: env.taskQueue },
      )
    ).result();
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('refuses a duration no Temporal timer holds: onboarding fails at once, /v1 answers 400 the same', async () => {
    const input = {
      externalRef: 'doorin-long',
      name: 'Long',
      options: { balanceRetryInterval: '99999999999999999999d' },
    };
    const refused = await refusalOf(
      await start(env.client, 'onboardTenant', onboardingWorkflowId('doorin-long'), input),
    );
    expect(refused).toMatchObject({
      type: 'INVALID_INPUT',
      problems: [expect.stringMatching(/^options\.balanceRetryInterval: must be at most 36500d/)],
    });
    const http = await callAs(url, 'POST', '/v1/tenants', backend.token, { ...input, externalRef: 'doorin-long-2' });
    expect(http.status).toBe(400);
    expect(http.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['options.balanceRetryInterval'] });
    expect(http.json.error.message).toBe(`invalid input: ${refused.problems.join('; ')}`);
    const { rows } = await env.pool.query(`SELECT 1 FROM tenants WHERE external_ref LIKE 'doorin-long%'`);
    expect(rows).toEqual([]);
  });

  it("refuses a fleet rotation's cursor and totals from a caller, in the run and over /v1; no schedule is made", async () => {
    const carried = { after: 'zzz', totals: { started: -5, completed: 0, held: 0, skipped: 0, failed: 0 } };
    const refused = await refusalOf(await start(env.client, 'rotateFleet', 'rotate-fleet:default', carried));
    expect(refused).toMatchObject({ type: 'INVALID_INPUT', problems: [`after: ${CARRIED}`, `totals: ${CARRIED}`] });

    const http = await callAs(url, 'POST', '/v1/rotation-schedules', admin.token, {
      every: '30d',
      fleet: true,
      ...carried,
    });
    expect(http.status).toBe(400);
    expect(http.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['after', 'totals'] });
    expect(http.json.error.message).toBe(`invalid input: ${refused.problems.join('; ')}`);
    expect(await scheduleExists(fleetScheduleId('default'))).toBe(false);
  });

  it("refuses the top-up sweep's cursor from a caller, in the run and over /v1; no schedule is made", async () => {
    const refused = await refusalOf(
      await start(env.client, 'autoTopUpSweep', autoTopUpSweepWorkflowId(), { after: 'zzz' }),
    );
    expect(refused).toMatchObject({ type: 'INVALID_INPUT', problems: [`after: ${CARRIED}`] });

    const http = await callAs(url, 'POST', '/v1/funding/schedule', admin.token, { every: '1h', after: 'zzz' });
    expect(http.status).toBe(400);
    expect(http.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['after'] });
    expect(http.json.error.message).toBe(`invalid input: ${refused.problems.join('; ')}`);
    expect(await scheduleExists(AUTO_TOP_UP_SCHEDULE_ID)).toBe(false);
  });

  it("holds rolloutPlan and convergeTenantPlan to the worker's key limit, as the rollout and the assignment are", async () => {
    const plan = { name: 'wide', version: 1 };
    const rollout = await refusalOf(
      await start(env.client, 'rolloutPlan', planRolloutWorkflowId(plan), {
        plan: 'wide',
        version: 1,
        requestedBy: 'mallory',
      }),
    );
    expect(rollout).toMatchObject({
      type: 'INVALID_INPUT',
      problems: [expect.stringMatching(/^plan: wide@1's keySlots: a plan may have at most 1 slot/)],
    });
    const httpRollout = await callAs(url, 'POST', '/v1/plans/wide/rollouts', admin.token, { version: 1 });
    expect(httpRollout.status).toBe(400);
    expect(httpRollout.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['plan'] });
    expect(httpRollout.json.error.message).toBe(`invalid input: ${rollout.problems.join('; ')}`);

    const converge = await refusalOf(
      await start(env.client, 'convergeTenantPlan', planConvergenceWorkflowId('doorin-t'), {
        externalRef: 'doorin-t',
        plan: 'wide',
        version: 1,
        requestedBy: 'mallory',
      }),
    );
    expect(converge).toMatchObject({ type: 'INVALID_INPUT', problems: rollout.problems });
    const httpAssign = await callAs(url, 'POST', '/v1/tenants/doorin-t/plan', admin.token, { plan: 'wide@1' });
    expect(httpAssign.status).toBe(400);
    expect(httpAssign.json.error.message).toBe(`invalid input: ${converge.problems.join('; ')}`);
    const { rows } = await env.pool.query(`SELECT plan_name FROM tenants WHERE external_ref = 'doorin-t'`);
    expect(rows).toEqual([{ plan_name: null }]);
  });

  it("refuses a rollout's cursor from a caller, with the key limit, in one answer", async () => {
    const refused = await refusalOf(
      await start(env.client, 'rolloutPlan', planRolloutWorkflowId({ name: 'wide', version: 1 }), {
        plan: 'wide',
        version: 1,
        requestedBy: 'mallory',
        after: 'zzz',
      }),
    );
    expect(refused.problems).toEqual([`after: ${CARRIED}`, expect.stringMatching(/^plan: wide@1's keySlots: /)]);
  });
});
