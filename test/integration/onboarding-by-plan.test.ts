/**
 * Onboarding by plan (issue 33, part 2) as its users do it: a signup backend POSTs /v1/tenants with `plan` to a
 * gateway listening on loopback, and tenantctl runs `onboard --plan` as a child process. The started run
 * completes with everything the plan says, each effect once: the initial funding (one transfer), a key per
 * slot (one create each on the simulator), the auto top-up policy, a rotation Schedule per slot, the plan
 * version on the tenant's record and one tenant.plan_changed event. An unknown plan or version is refused
 * before anything starts, naming `plan`.
 */
import { ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotationScheduleId } from '../../src/domain/ids.js';
import { DEFAULT_SEED } from '../../src/sim/index.js';
import type { OnboardTenantResult } from '../../workflows/onboard-tenant-messages.js';
import { runCli } from '../harness/cli.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { callAs, HARNESS_OPERATOR } from '../harness/operator-gateway.js';

const PRO = {
  initialFundingMicroUsd: '3000000',
  keySlots: ['default', 'web', 'api'],
  rotation: { interval: '90d', quietPeriod: '1h', overlapWindow: '2h' },
  autoTopUp: { below: '1000000', to: '3000000', maxPerDay: '10000000' },
};
const SLOTS = ['default', 'web', 'api'];

describe('onboarding by plan', () => {
  let env: OrchestratorEnv;
  const made: string[] = [];
  const url = () => env.cliEnv['TENANTCTL_GATEWAY_URL']!;
  const post = (path: string, body: unknown) => callAs(url(), 'POST', path, HARNESS_OPERATOR.token, body);

  /** What the plan left for a tenant, read from the simulator, our records and Temporal. */
  async function effectsOf(ref: string) {
    const state = env.sim.state();
    const subaccount = state.subaccounts.find((s) => s.externalRef === ref)!;
    const transfers = state.transfers.filter((t) => t.subaccountId === subaccount.id);
    const keys = state.apiKeys.filter((k) => k.subaccountId === subaccount.id);
    const { rows: tenant } = await env.pool.query(
      `SELECT status, plan_name, plan_version FROM tenants WHERE external_ref = $1::text`,
      [ref],
    );
    const { rows: policy } = await env.pool.query(
      `SELECT below_micro_usd::text AS below, to_micro_usd::text AS to, max_per_day_micro_usd::text AS "maxPerDay"
         FROM funding_policies WHERE external_ref = $1::text`,
      [ref],
    );
    const { rows: events } = await env.pool.query(
      `SELECT payload FROM event_outbox WHERE external_ref = $1::text AND type = 'tenant.plan_changed'`,
      [ref],
    );
    const { rows: stored } = await env.pool.query(
      `SELECT slot FROM tenant_keys WHERE external_ref = $1::text AND status = 'active' ORDER BY slot`,
      [ref],
    );
    const schedules = await Promise.all(
      SLOTS.map(async (slot) => {
        const description = await env.client.schedule.getHandle(rotationScheduleId(ref, slot)).describe();
        made.push(description.scheduleId);
        return { slot, every: description.spec.intervals?.[0]?.every };
      }),
    );
    return { transfers, keys, tenant, policy, events, stored, schedules };
  }

  function expectThePlan(effects: Awaited<ReturnType<typeof effectsOf>>, ref: string) {
    expect(effects.transfers.map((t) => t.amountMicroUsd)).toEqual(['3000000']);
    // One key create per slot, each kept: no slot got a second key.
    expect(effects.keys).toHaveLength(3);
    expect(effects.keys.every((k) => k.status === 'active')).toBe(true);
    expect(effects.stored.map((r) => r.slot)).toEqual(['api', 'default', 'web']);
    expect(effects.tenant).toEqual([{ status: 'active', plan_name: 'pro', plan_version: 1 }]);
    expect(effects.policy).toEqual([{ below: '1000000', to: '3000000', maxPerDay: '10000000' }]);
    expect(effects.events.map((e) => e.payload)).toEqual([
      { externalRef: ref, from: null, to: { name: 'pro', version: 1 } },
    ]);
    expect(effects.schedules).toEqual(SLOTS.map((slot) => ({ slot, every: 90 * 24 * 3600 * 1000 })));
  }

  beforeAll(async () => {
    // Three slots with default: the worker, the gateway and the simulator allow a tenant 4 active keys.
    env = await createOrchestratorEnv(
      'onboarding-by-plan',
      { seed: { ...DEFAULT_SEED, tenantActiveKeyLimit: 4 } },
      { platformTenantKeyLimit: 4 },
    );
    await env.startOrchestratorWorker();
    const created = await post('/v1/plans', { name: 'pro', ...PRO });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
  });
  afterAll(async () => {
    for (const id of made)
      await env.client.schedule
        .getHandle(id)
        .delete()
        .catch((error: unknown) => {
          if (!(error instanceof ScheduleNotFoundError)) throw error;
        });
    await env?.close();
  });

  it('a signup backend onboards with plan over HTTP and the run does the whole plan once', async () => {
    const answer = await post('/v1/tenants', { externalRef: 'plan-http', name: 'Plan Http', plan: 'pro' });
    expect(answer.status, JSON.stringify(answer.json)).toBe(202);
    const handle = env.client.workflow.getHandle(answer.json.data.workflowId as string);
    const result = (await handle.result()) as OnboardTenantResult;
    expect(result).toMatchObject({ externalRef: 'plan-http', status: 'active', funding: expect.anything() });
    expect(result.plan).toMatchObject({ name: 'pro', version: 1, policySet: true });
    expect(result.plan!.keys.map((k) => [k.slot, k.outcome])).toEqual([
      ['web', 'issued'],
      ['api', 'issued'],
    ]);
    // The version was pinned when the run started: its input names it, so a retry or replay cannot move.
    const started = (await handle.fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
    const given = JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString('utf8')) as unknown;
    expect(given).toEqual({ externalRef: 'plan-http', name: 'Plan Http', plan: 'pro@1' });
    expectThePlan(await effectsOf('plan-http'), 'plan-http');

    // Asked again, as a retrying signup backend would: the same run is answered and nothing is done twice.
    const again = await post('/v1/tenants', { externalRef: 'plan-http', name: 'Plan Http', plan: 'pro' });
    expect(again.status, JSON.stringify(again.json)).toBe(202);
    expect(again.json.data.started).toBe(false);
    expectThePlan(await effectsOf('plan-http'), 'plan-http');
  });

  it('refuses an unknown plan or version, or plan with an amount, before anything starts', async () => {
    for (const [ref, body, field] of [
      ['plan-nope', { plan: 'nope' }, 'plan'],
      ['plan-v9', { plan: 'pro@9' }, 'plan'],
      ['plan-bad', { plan: 'pro@x' }, 'plan'],
      ['plan-both', { plan: 'pro', fundingMicroUsd: '1000' }, 'fundingMicroUsd'],
    ] as const) {
      const answer = await post('/v1/tenants', { externalRef: ref, name: 'Refused', ...body });
      expect(answer.status, JSON.stringify(answer.json)).toBe(400);
      expect(answer.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: [field] });
      expect(answer.json.error.message).toContain(`${field}:`);
      const { rows } = await env.pool.query(`SELECT 1 FROM tenants WHERE external_ref = $1::text`, [ref]);
      expect(rows).toEqual([]);
      expect(await workflowExists(env.client, `onboard:${ref}`)).toBe(false);
    }
  });

  it('a dry run with plan lists what the plan will do and starts nothing; an unknown plan is refused', async () => {
    const dry = await post('/v1/tenants?dryRun=true', { externalRef: 'plan-dry', name: 'Plan Dry', plan: 'pro' });
    expect(dry.status, JSON.stringify(dry.json)).toBe(200);
    const steps = dry.json.data.plan as string[];
    expect(steps).toContain('fund its wallet with 3000000 micro-USD (transfer "initial" written first)');
    expect(steps).toContain("issue a key in each of the plan's slots (web, api)");
    expect(steps).toContain('record plan pro@1 (event tenant.plan_changed)');
    const unknown = await post('/v1/tenants?dryRun=true', { externalRef: 'plan-dry', name: 'Plan Dry', plan: 'gold' });
    expect(unknown.status, JSON.stringify(unknown.json)).toBe(400);
    expect(unknown.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['plan'] });
    expect(await workflowExists(env.client, 'onboard:plan-dry')).toBe(false);
  });

  it('tenantctl onboard --plan waits for the run and says what the plan did', async () => {
    const cli = await runCli(
      ['onboard', '--external-ref', 'plan-cli', '--name', 'Plan Cli', '--plan', 'pro@1', '--wait', '--json'],
      env.cliEnv,
      120_000,
    );
    expect(cli.code, cli.stderr).toBe(0);
    const { result } = JSON.parse(cli.stdout) as { result: OnboardTenantResult };
    expect(result.plan).toMatchObject({ name: 'pro', version: 1, policySet: true });
    expectThePlan(await effectsOf('plan-cli'), 'plan-cli');

    const refused = await runCli(
      ['onboard', '--external-ref', 'plan-cli-nope', '--name', 'Nope', '--plan', 'nope'],
      env.cliEnv,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('plan: no plan named nope');
    expect(await workflowExists(env.client, 'onboard:plan-cli-nope')).toBe(false);
  });
});
