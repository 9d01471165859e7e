/**
 * A plan's resume floor and close delay apply to the tenants on it (issue 33), as an operator meets them with
 * tenantctl (child processes, through a gateway, as an `operator`): `resume` refuses a tenant below its plan's
 * floor (the server's own floor is 0 here) and takes it once funded; `close` without `--after` waits the plan's
 * delay, a shorter `--after` is refused naming the plan, nothing started. A tenant on no plan keeps the
 * server's settings.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlan } from '../../src/client/plans/plans.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { generateOperator } from '../../src/secrets/operators.js';
import type { TestWorker } from '../harness/context.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

const olga = { name: 'olga', ...generateOperator('olga', 'operator') };
const DAY_MS = 24 * 3600 * 1000;

describe("a plan's resume floor and close delay", () => {
  let env: OrchestratorEnv;
  let worker: TestWorker;
  let gateway: OperatorGateway;
  const cli = (args: string[]) =>
    runCli(args, { ...env.cliEnv, TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: olga.token });

  beforeAll(async () => {
    env = await createOrchestratorEnv('plan-lifecycle');
    worker = await env.startOrchestratorWorker();
    // The server's own close delay is an hour; the plan's is 30 days.
    gateway = await startOperatorGateway(env, { entries: [olga.entry], gateway: { closeDelay: '1h' } });
    await createPlan(
      env.pool,
      {
        name: 'careful',
        keySlots: ['default'],
        initialFundingMicroUsd: '1000000',
        resumeBalanceFloorMicroUsd: '5000000',
        closeDelay: '30d',
      },
      { actor: 'test' },
    );
    for (const [ref, plan] of [
      ['pl-1', 'careful'],
      ['pl-none', undefined],
    ] as const) {
      const handle = await startOnboarding(
        env.client,
        { externalRef: ref, name: `Tenant ${ref}`, ...(plan ? { plan } : { fundingMicroUsd: '1000000' }) },
        { taskQueue: env.taskQueue },
      );
      await handle.result();
    }
  });
  afterAll(async () => {
    await gateway?.close();
    await worker?.stop();
    await env?.close();
  });

  it('resume refuses a tenant below its plan`s floor, and takes it once funded', async () => {
    const suspended = await cli(['suspend', 'pl-1', '--reason', 'payment review']);
    expect(suspended.code, suspended.stderr).toBe(0);
    const refused = await cli(['resume', 'pl-1', '--reason', 'paid']);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/1000000 micro-USD, below the resume floor of 5000000.*\[BALANCE_BELOW_FLOOR\]/);
    // A tenant on no plan keeps the server's floor (0): the same balance resumes.
    expect((await cli(['suspend', 'pl-none', '--reason', 'payment review'])).code).toBe(0);
    const other = await cli(['resume', 'pl-none', '--reason', 'paid']);
    expect(other.code, other.stderr).toBe(0);

    const funded = await cli([
      'fund',
      'pl-1',
      '--amount',
      '4000000',
      '--key',
      'pl-1-floor',
      '--reason',
      'up to the floor',
      '--wait',
    ]);
    expect(funded.code, funded.stderr).toBe(0);
    const resumed = await cli(['resume', 'pl-1', '--reason', 'paid']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const { rows } = await env.pool.query(`SELECT status FROM tenants WHERE external_ref = 'pl-1'`);
    expect(rows).toEqual([{ status: 'active' }]);
  });

  it('close waits the plan`s delay; a shorter --after is refused naming the plan, nothing started', async () => {
    const sooner = await cli(['close', 'pl-1', '--after', '2h', '--reason', 'churned', '--no-wait']);
    expect(sooner.code).toBe(2);
    expect(sooner.stderr).toMatch(/--after: must be at least 30d \(the closeDelay of plan careful@1/);
    await expect(env.client.workflow.getHandle('close:pl-1').describe()).rejects.toThrow();

    const before = Date.now();
    const closing = await cli(['close', 'pl-1', '--reason', 'churned', '--no-wait']);
    expect(closing.code, closing.stderr).toBe(0);
    let closeAt: Date | undefined;
    for (let i = 0; i < 100 && !closeAt; i++) {
      const { rows } = await env.pool.query<{ closeAt: Date }>(
        `SELECT close_at AS "closeAt" FROM close_schedules WHERE external_ref = 'pl-1' AND state = 'scheduled'`,
      );
      closeAt = rows[0]?.closeAt;
      if (!closeAt) await new Promise((r) => setTimeout(r, 100));
    }
    expect(closeAt!.getTime() - before).toBeGreaterThanOrEqual(30 * DAY_MS - 60_000);
    expect(closeAt!.getTime() - before).toBeLessThanOrEqual(30 * DAY_MS + 60_000);
    // The tenant on no plan: the server's hour.
    const none = await cli(['close', 'pl-none', '--reason', 'churned', '--no-wait']);
    expect(none.code, none.stderr).toBe(0);
    for (let i = 0; i < 100; i++) {
      const { rows } = await env.pool.query<{ closeAt: Date }>(
        `SELECT close_at AS "closeAt" FROM close_schedules WHERE external_ref = 'pl-none' AND state = 'scheduled'`,
      );
      if (rows[0]) {
        expect(rows[0].closeAt.getTime() - Date.now()).toBeLessThanOrEqual(3600_000);
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const ref of ['pl-1', 'pl-none'])
      expect((await cli(['close', '--cancel', ref, '--reason', 'kept'])).code).toBe(0);
  });
});
