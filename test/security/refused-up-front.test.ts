/**
 * Every 202 (or 200) is for something that can succeed (issue 45, Build 2): what would only fail later is
 * refused where it is asked, with one error naming the field and the rule, over HTTP and through tenantctl
 * alike, and nothing is started or written. A resume while a delayed close waits out its window is one
 * (409 CLOSE_SCHEDULED, not a run that fails with the tenant left suspended); a funding policy whose
 * monthly cap is below its daily cap is another (400 naming maxPerMonth, not a stored policy); a suspend of a
 * closed tenant (409 TENANT_CLOSED) and a resume of a tenant whose wallet is below its resume floor (409
 * BALANCE_BELOW_FLOOR naming the floor, read with the parent key the gateway holds) are two more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../src/gateway/app.js';
import { lifecycleWorkflowId } from '../../src/domain/ids.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { DEFAULT_PLATFORM_KEY } from '../../src/sim/index.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { listenGatewayOver, waitFor } from '../harness/gateway-app.js';
import { callAs } from '../harness/operator-gateway.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

const backend = generateOperator('upf-backend', 'backend');
const operator = generateOperator('upf-operator', 'operator');
const admin = generateOperator('upf-admin', 'admin');
/** The resume floor, the same on the worker and the gateway (RESUME_BALANCE_FLOOR_MICRO_USD of one configuration). */
const FLOOR = '1000';
const parsed = parseOperatorList([backend.entry, operator.entry, admin.entry].join(','));
if (!parsed.ok) throw new Error(parsed.problems.join('; '));

describe('refused up front: nothing that would fail later is accepted', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const cli = (args: string[], token: string) =>
    runCli(args, { TENANTCTL_GATEWAY_URL: url, TENANTCTL_OPERATOR_TOKEN: token });
  const written = async (externalRef: string) =>
    (
      await env.pool.query<Record<string, unknown>>(
        `SELECT (SELECT status FROM tenants WHERE external_ref = $1::text) AS status,
                (SELECT count(*)::int FROM audit_log WHERE external_ref = $1::text) AS audit,
                (SELECT count(*)::int FROM event_outbox) AS events,
                (SELECT count(*)::int FROM funding_policies WHERE external_ref = $1::text) AS policies,
                (SELECT count(*)::int FROM plans) AS plans`,
        [externalRef],
      )
    ).rows[0]!;

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-upfront', {}, { lifecycle: { resumeBalanceFloorMicroUsd: FLOOR } });
    await env.startOrchestratorWorker();
    ({ gateway, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      closeDelay: '30d',
      resumeBalanceFloorMicroUsd: FLOOR,
      // The parent key this gateway holds, read-only (as GET /v1/tenants/:ref/wallet reads the wallet with it).
      preflightPlatform: createPlatformClient({
        baseUrl: env.sim.apiBase,
        platformKey: DEFAULT_PLATFORM_KEY,
        timeoutMs: 2_000,
      }),
    }));
    const plan = await callAs(url, 'POST', '/v1/plans', admin.token, {
      name: 'upf-floors',
      keySlots: ['default'],
      initialFundingMicroUsd: '2000',
      resumeBalanceFloorMicroUsd: '5000',
    });
    expect(plan.status, JSON.stringify(plan.json)).toBe(201);
    for (const [externalRef, funding] of [
      ['upf-closing', {}],
      ['upf-funded', {}],
      ['upf-closed', {}],
      ['upf-poor', { fundingMicroUsd: '10' }],
      ['upf-at-floor', { fundingMicroUsd: FLOOR }],
      ['upf-planned', { plan: 'upf-floors' }],
    ] as const) {
      const started = await callAs(url, 'POST', '/v1/tenants', backend.token, {
        externalRef,
        name: 'Acme',
        ...funding,
      });
      expect(started.status).toBe(202);
      await env.client.workflow.getHandle(started.json.data.workflowId as string).result();
    }
  });
  afterAll(async () => {
    // The delayed close is undone, so that no run is left waiting on the shared server.
    await callAs(url, 'POST', '/v1/tenants/upf-closing/close/cancel', admin.token, { reason: 'test over' }).catch(
      () => undefined,
    );
    await gateway?.app.close();
    await env?.close();
  });

  it(
    'refuses a resume while a delayed close waits out its window with 409 CLOSE_SCHEDULED naming the rule, ' +
      'over HTTP and tenantctl, and starts no run',
    async () => {
      const close = await callAs(url, 'POST', '/v1/tenants/upf-closing/close', backend.token, {
        reason: 'customer left',
        after: '30d',
      });
      expect(close.status).toBe(202);
      await waitFor(
        async () =>
          (
            await env.pool.query(
              `SELECT state FROM close_schedules WHERE external_ref = 'upf-closing' AND state = 'scheduled'`,
            )
          ).rowCount,
        (rows) => rows === 1,
        30_000,
        'the close schedule',
      );
      await waitFor(
        async () => (await written('upf-closing')).status,
        (status) => status === 'suspended',
        30_000,
        'the tenant suspended',
      );
      const before = await written('upf-closing');

      const messages = new Set<string>();
      for (const caller of [backend, operator]) {
        const resume = await callAs(url, 'POST', '/v1/tenants/upf-closing/resume', caller.token, {
          reason: 'invoice paid',
        });
        expect(resume.status, caller.entry.split(':')[0]).toBe(409);
        expect(resume.json.error).toMatchObject({ code: 'CLOSE_SCHEDULED', fields: ['externalRef'] });
        expect(resume.json.error.message).toMatch(/close is scheduled for .* not resumed inside its close window/);
        expect(resume.json.error.message).toMatch(/tenantctl close --cancel upf-closing --reason/);
        messages.add(resume.json.error.message as string);
      }
      expect(messages.size).toBe(1);
      // tenantctl is a client of the same route: the same refusal, in the same words.
      const viaCli = await cli(['resume', 'upf-closing', '--reason', 'invoice paid'], operator.token);
      expect(viaCli.code).not.toBe(0);
      expect(viaCli.stderr).toContain([...messages][0]);

      await expect(
        env.client.workflow.getHandle(lifecycleWorkflowId('resume', 'upf-closing')).describe(),
      ).rejects.toThrow();
      expect(await written('upf-closing')).toEqual(before);
    },
  );

  it(
    'refuses a funding policy whose maxPerMonth is below its maxPerDay with one 400 naming maxPerMonth, over ' +
      'HTTP, tenantctl and a plan, and writes nothing',
    async () => {
      const before = await written('upf-funded');
      const policy = { below: '1000000', to: '5000000', maxPerDay: '10000000', maxPerMonth: '9999999' };
      for (const caller of [backend, operator]) {
        const set = await callAs(url, 'PUT', '/v1/tenants/upf-funded/funding-policy', caller.token, policy);
        expect(set.status).toBe(400);
        expect(set.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['maxPerMonth'] });
        expect(set.json.error.message).toMatch(/maxPerMonth: .*maxPerDay/);
      }
      const viaCli = await cli(
        [
          'funding',
          'policy',
          'set',
          'upf-funded',
          '--below',
          policy.below,
          '--to',
          policy.to,
          '--max-per-day',
          policy.maxPerDay,
          '--max-per-month',
          policy.maxPerMonth,
        ],
        operator.token,
      );
      expect(viaCli.code).not.toBe(0);
      expect(viaCli.stderr).toMatch(/max-per-month/i);
      const plan = await callAs(url, 'POST', '/v1/plans', admin.token, {
        name: 'upf-plan',
        keySlots: ['default'],
        autoTopUp: policy,
      });
      expect(plan.status).toBe(400);
      expect(plan.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['autoTopUp.maxPerMonth'] });
      expect(await written('upf-funded')).toEqual(before);

      // A month's cap equal to the day's is a policy that can act: taken.
      const equal = await callAs(url, 'PUT', '/v1/tenants/upf-funded/funding-policy', backend.token, {
        ...policy,
        maxPerMonth: policy.maxPerDay,
      });
      expect(equal.status).toBe(200);
    },
  );

  it(
    'refuses a suspend of a closed tenant with 409 TENANT_CLOSED naming externalRef, over HTTP and tenantctl, ' +
      'and starts no run',
    async () => {
      const close = await callAs(url, 'POST', '/v1/tenants/upf-closed/close', admin.token, {
        reason: 'customer left',
        after: '0',
      });
      expect(close.status).toBe(202);
      await env.client.workflow.getHandle(close.json.data.workflowId as string).result();
      const before = await written('upf-closed');
      expect(before.status).toBe('closed');

      const messages = new Set<string>();
      for (const caller of [backend, operator]) {
        const suspend = await callAs(url, 'POST', '/v1/tenants/upf-closed/suspend', caller.token, {
          reason: 'unpaid invoice',
        });
        expect(suspend.status, caller.entry.split(':')[0]).toBe(409);
        expect(suspend.json.error).toMatchObject({ code: 'TENANT_CLOSED', fields: ['externalRef'] });
        expect(suspend.json.error.message).toBe('tenant upf-closed is closed: it is not suspended.');
        messages.add(suspend.json.error.message as string);
      }
      expect(messages.size).toBe(1);
      const viaCli = await cli(['suspend', 'upf-closed', '--reason', 'unpaid invoice'], operator.token);
      expect(viaCli.code).not.toBe(0);
      expect(viaCli.stderr).toContain([...messages][0]);

      await expect(
        env.client.workflow.getHandle(lifecycleWorkflowId('suspend', 'upf-closed')).describe(),
      ).rejects.toThrow();
      expect(await written('upf-closed')).toEqual(before);
    },
  );

  it(
    "refuses a resume of a tenant whose wallet is below its resume floor (the server's, or its plan's) with 409 " +
      'BALANCE_BELOW_FLOOR naming the floor, over HTTP and tenantctl, and starts no run; at the floor it resumes',
    async () => {
      for (const externalRef of ['upf-poor', 'upf-at-floor', 'upf-planned']) {
        const suspend = await callAs(url, 'POST', `/v1/tenants/${externalRef}/suspend`, backend.token, {
          reason: 'payment review',
        });
        expect(suspend.status).toBe(202);
        await env.client.workflow.getHandle(suspend.json.data.workflowId as string).result();
      }
      const subaccountOf = async (externalRef: string) =>
        (
          await env.pool.query<{ id: string }>(`SELECT subaccount_id AS id FROM tenants WHERE external_ref = $1`, [
            externalRef,
          ])
        ).rows[0]!.id;
      const platformStatus = async (externalRef: string) => {
        const id = await subaccountOf(externalRef);
        return env.sim.state().subaccounts.find((s) => s.id === id)?.status;
      };

      for (const [externalRef, balance, floor, from] of [
        ['upf-poor', '10', FLOOR, 'RESUME_BALANCE_FLOOR_MICRO_USD'],
        ['upf-planned', '2000', '5000', 'the resumeBalanceFloorMicroUsd of plan upf-floors@1'],
      ] as const) {
        const before = await written(externalRef);
        const messages = new Set<string>();
        for (const caller of [backend, operator]) {
          const resume = await callAs(url, 'POST', `/v1/tenants/${externalRef}/resume`, caller.token, {
            reason: 'invoice paid',
          });
          expect(resume.status, caller.entry.split(':')[0]).toBe(409);
          expect(resume.json.error).toMatchObject({ code: 'BALANCE_BELOW_FLOOR', fields: ['externalRef'] });
          expect(resume.json.error.message).toBe(
            `tenant ${externalRef} is suspended: its wallet holds ${balance} micro-USD, below the resume floor of ` +
              `${floor} micro-USD (${from}): fund it first.`,
          );
          messages.add(resume.json.error.message as string);
        }
        expect(messages.size).toBe(1);
        const viaCli = await cli(['resume', externalRef, '--reason', 'invoice paid'], operator.token);
        expect(viaCli.code).not.toBe(0);
        expect(viaCli.stderr).toContain([...messages][0]);

        await expect(
          env.client.workflow.getHandle(lifecycleWorkflowId('resume', externalRef)).describe(),
        ).rejects.toThrow();
        expect(await written(externalRef)).toEqual(before);
        expect(await platformStatus(externalRef)).toBe('suspended');
      }

      // A wallet at the floor is a resume that can succeed: started, and it does.
      const resume = await callAs(url, 'POST', '/v1/tenants/upf-at-floor/resume', operator.token, {
        reason: 'invoice paid',
      });
      expect(resume.status, JSON.stringify(resume.json)).toBe(202);
      await env.client.workflow.getHandle(resume.json.data.workflowId as string).result();
      expect((await written('upf-at-floor')).status).toBe('active');
      expect(await platformStatus('upf-at-floor')).toBe('active');
    },
  );
});
