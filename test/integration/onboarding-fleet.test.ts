import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { SIM_SHAPES } from '../../src/sim/choices.js';
import { DEFAULT_PARENT_ID } from '../../src/sim/index.js';
import { onboardingStatusQuery } from '../../workflows/onboard-tenant-messages.js';
import { runCli } from '../harness/cli.js';
import { expectExactlyOnce } from '../harness/onboarding-checks.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';

/**
 * Issue 15, finding 5: the platform of the issue pages two at a time, ignores `limit`, and answers a
 * replayed create key with 409. A lost create response then needs the find-by-external-ref to scan the
 * whole fleet; at 10,000 sub-accounts that is 5,001 pages, far past any page cap a client might set.
 */
const FLEET = 10_000;

describe('a lost create response on a large fleet', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('fleet-10k', { choices: SIM_SHAPES.alt });
    await env.startOrchestratorWorker();
    const response = await fetch(`${env.sim.url}/__sim/subaccounts/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parentId: DEFAULT_PARENT_ID, count: FLEET, externalRefPrefix: 'fleet' }),
    });
    expect(response.status).toBe(200);
  });
  afterAll(async () => env?.close());

  it(
    'recovers on 10,000 sub-accounts listed 2 per page (limit ignored): one ' + 'sub-account, onboarding completes',
    async () => {
      await setFaults(env.sim, [{ method: 'POST', path: '/subaccounts/create', mode: 'drop-after-commit', count: 1 }]);
      const pagesBefore = env.sim.state().stats.byRoute['GET /subaccounts'] ?? 0;
      const handle = await startOnboarding(
        env.client,
        { externalRef: 'lost-at-scale', name: 'Lost At Scale' },
        { taskQueue: env.taskQueue },
      );
      const result = await handle.result();
      await clearFaults(env.sim);

      expect(result.status).toBe('active');
      expectExactlyOnce(env.sim.state(), 'lost-at-scale', { amountMicroUsd: null });
      expect(env.sim.state().subaccounts).toHaveLength(FLEET + 1);
      // The new tenant is last in the list: the scan went through every page, well past 100.
      const pages = (env.sim.state().stats.byRoute['GET /subaccounts'] ?? 0) - pagesBefore;
      expect(pages).toBeGreaterThanOrEqual(Math.ceil((FLEET + 1) / 2));
      const { rows } = await env.pool.query(
        `SELECT subaccount_id AS "subaccountId" FROM tenants WHERE external_ref = 'lost-at-scale'`,
      );
      expect(rows).toEqual([{ subaccountId: result.subaccountId }]);
      const { rows: audit } = await env.pool.query(
        `SELECT action FROM audit_log WHERE external_ref = 'lost-at-scale' AND action LIKE 'tenant.%' ORDER BY id`,
      );
      expect(audit.map((r) => r.action)).toContain('tenant.adopted');
    },
    300_000,
  );

  it("a failed onboarding says why: in the CLI (onboard --wait) and in the run's status", async () => {
    await setFaults(env.sim, [
      {
        method: 'POST',
        path: '/subaccounts/create',
        mode: 'error-before-commit',
        status: 400,
        code: 'VALIDATION_ERROR',
        message: 'name: refused by policy',
      },
    ]);
    try {
      const cli = await runCli(
        ['onboard', '--external-ref', 'refused-1', '--name', 'Refused One', '--wait'],
        env.cliEnv,
      );
      expect(cli.code).not.toBe(0);
      expect(cli.stderr).toMatch(/VALIDATION_FAILED/);
      expect(cli.stderr).toMatch(/refused by policy/);
      const status = await env.client.workflow.getHandle('onboard:refused-1').query(onboardingStatusQuery);
      expect(status.stage).toBe('failed');
      expect(status.error).toMatch(/^VALIDATION_FAILED: .*refused by policy/);
    } finally {
      await clearFaults(env.sim);
    }
  });
});
