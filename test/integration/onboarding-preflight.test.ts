import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { setParentInsufficient } from '../../src/db/funding-store.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { DEFAULT_PLATFORM_KEY } from '../../src/sim/seed.js';
import { runCli } from '../harness/cli.js';
import type { LooseJson } from '../harness/sim-calls.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { failureTypeOf, workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/**
 * Preflight (issue 22): `tenantctl onboard --dry-run` and `POST /v1/tenants?dryRun=true` check and
 * print the plan without writing or mutating anything; the onboarding runs the same checks first.
 */
describe('onboarding preflight', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;

  beforeAll(async () => {
    env = await createOrchestratorEnv('preflight');
    await env.startOrchestratorWorker();
    ({ gateway, url } = await listenGatewayOver(env, {
      preflightPlatform: createPlatformClient({ baseUrl: env.sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY }),
    }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  /** Everything a dry run could have changed: the platform's books and our records. */
  async function world() {
    const state = env.sim.state();
    // Every call the platform took that was not a read, by route: a dry run adds none.
    const mutatingCalls = Object.entries(state.stats.byRoute)
      .filter(([route]) => !route.startsWith('GET '))
      .reduce((sum, [, n]) => sum + n, 0);
    const platform = {
      mutatingCalls,
      parents: state.parents,
      subaccounts: state.subaccounts,
      transfers: state.transfers,
      projects: state.projects,
      tenantKeys: state.apiKeys.filter((k) => k.subaccountId !== null),
    };
    const { rows } = await env.pool.query(
      `SELECT (SELECT count(*) FROM tenants)::int AS tenants, (SELECT count(*) FROM transfer_intents)::int AS transfers,
              (SELECT count(*) FROM audit_log)::int AS audit, (SELECT count(*) FROM tenant_keys)::int AS keys`,
    );
    return { platform, records: rows[0] };
  }
  const dryRun = (body: unknown, query = '?dryRun=true') =>
    fetch(`${url}/v1/tenants${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_API_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, json: (await r.json()) as LooseJson }));

  it(
    'tenantctl onboard --dry-run checks, prints the plan, writes nothing and makes no ' + 'mutating platform call',
    async () => {
      const before = await world();
      const run = await runCli(
        ['onboard', '--external-ref', 'pf-cli', '--name', 'Preflight CLI', '--funding', '5000', '--dry-run', '--json'],
        env.cliEnv,
      );
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({ dryRun: true, ok: true });
      expect(report.checks.map((c: { check: string; ok: boolean }) => [c.check, c.ok])).toEqual([
        ['externalRef', true],
        ['parentBalance', true],
        ['platform', true],
      ]);
      expect(report.plan.join('\n')).toMatch(/fund its wallet with 5000 micro-USD/);
      expect(await world()).toEqual(before);
      expect(await workflowExists(env.client, 'onboard:pf-cli')).toBe(false);

      const text = await runCli(
        ['onboard', '--external-ref', 'pf-cli', '--name', 'Preflight CLI', '--dry-run'],
        env.cliEnv,
      );
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/ok {3}platform: answered/);
      expect(text.stdout).toMatch(/plan \(nothing was done\)/);

      const bad = await runCli(
        ['onboard', '--external-ref', '-bad', '--name', 'X', '--funding', '1.5', '--dry-run'],
        env.cliEnv,
      );
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/externalRef: must be/);
      expect(bad.stderr).toMatch(/fundingMicroUsd: must be/);
      expect(await world()).toEqual(before);
    },
  );

  it(
    'POST /v1/tenants?dryRun=true answers the report; a taken ref is 422 and nothing ' +
      'changes; then a real start completes',
    async () => {
      const before = await world();
      const ok = await dryRun({ externalRef: 'pf-http', name: 'Preflight HTTP', fundingMicroUsd: '5000' });
      expect(ok.status).toBe(200);
      expect(ok.json.data).toMatchObject({ dryRun: true, ok: true });
      const invalid = await dryRun({ externalRef: 'pf-http', name: 'Preflight HTTP', fundingMicroUsd: 5000 });
      expect(invalid.status).toBe(400);
      expect(invalid.json.error.fields).toEqual(['fundingMicroUsd']);
      const badFlag = await dryRun({ externalRef: 'pf-http', name: 'Preflight HTTP' }, '?dryRun=yes');
      expect(badFlag.status).toBe(400);
      expect(await world()).toEqual(before);

      const started = await dryRun({ externalRef: 'pf-http', name: 'Preflight HTTP', fundingMicroUsd: '5000' }, '');
      expect(started.status).toBe(202);
      const result = await env.client.workflow.getHandle('onboard:pf-http').result();
      expect(result).toMatchObject({ status: 'active' });

      const afterStart = await world();
      const taken = await dryRun({ externalRef: 'pf-http', name: 'Preflight HTTP' });
      expect(taken.status).toBe(422);
      expect(taken.json.data.checks[0]).toMatchObject({ check: 'externalRef', ok: false });
      expect(taken.json.data.checks[0].detail).toMatch(/already recorded \(active\).*onboard:pf-http exists/);
      expect(await world()).toEqual(afterStart);
    },
  );

  it(
    'with the parent recorded short of funds, the dry run says so and the onboarding ' +
      'fails PREFLIGHT_FAILED before creating anything',
    async () => {
      await setParentInsufficient(env.pool, true, 'test');
      try {
        const before = await world();
        const run = await runCli(
          ['onboard', '--external-ref', 'pf-broke', '--name', 'Broke', '--funding', '5000', '--dry-run'],
          env.cliEnv,
        );
        expect(run.code).toBe(1);
        expect(run.stdout).toMatch(/FAIL parentBalance: the platform refused a transfer for INSUFFICIENT_BALANCE/);

        const handle = await startOnboarding(
          env.client,
          { externalRef: 'pf-broke', name: 'Broke', fundingMicroUsd: '5000' },
          { taskQueue: env.taskQueue },
        );
        const failure = await handle.result().catch((error: unknown) => error);
        expect(failureTypeOf(failure)).toBe('PREFLIGHT_FAILED');
        const after = await world();
        expect(after.platform).toEqual(before.platform);
        expect(after.records.tenants).toBe(before.records.tenants);
        expect(after.records.transfers).toBe(before.records.transfers);

        // No funding asked: nothing to cover, the onboarding goes ahead.
        const free = await (
          await startOnboarding(env.client, { externalRef: 'pf-free', name: 'Free' }, { taskQueue: env.taskQueue })
        ).result();
        expect(free).toMatchObject({ status: 'active', funding: null });
      } finally {
        await setParentInsufficient(env.pool, false, 'test');
      }
    },
  );
});
