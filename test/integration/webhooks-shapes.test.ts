import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { TEST_API_TOKEN, waitFor } from '../harness/gateway-app.js';
import { startGateway, type RunningGateway } from '../../src/main/gateway.js';
import { SIM_SHAPES } from '../../src/sim/choices.js';
import {
  adminCall,
  createProject,
  createTenant,
  createTenantKey,
  DEFAULT_PERSONAL_TOKEN,
} from '../harness/sim-calls.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { HARNESS_OPERATOR } from '../harness/operator-gateway.js';
import { freePort } from '../../src/infra/ports.js';

/**
 * Issue 15, findings 3 and 4, through `tenantctl` as an operator runs it (a client of the gateway, which holds
 * the personal token): registry webhooks on a tenant's project are managed with the parent's personal token on
 * the project id, never with
 * X-Service-Subaccount (the alt platform answers that with 403 SUBACCOUNT_SCOPE), and the platform's
 * delivery records are read whatever their shape (`status`/`responseCode` or `outcome`/`lastResponse.status`).
 */
describe.each(['default', 'alt'] as const)('tenantctl webhooks against the %s platform shape', (shape) => {
  let env: OrchestratorEnv;
  let gateway: RunningGateway;
  let projectId: string;
  let cliEnv: Record<string, string>;
  const externalRef = `hooked-${shape}`;

  beforeAll(async () => {
    env = await createOrchestratorEnv(`webhooks-${shape}`, {
      choices: { ...SIM_SHAPES[shape], deliveryBaseDelayMs: 50 },
    });
    await env.startOrchestratorWorker();
    // The gateway holds the personal token and the parent key; tenantctl holds only its URL and a token.
    const port = await freePort();
    gateway = await startGateway(
      loadConfig({
        ...env.cliEnv,
        LOG_LEVEL: 'warn',
        GATEWAY_PORT: String(port),
        GATEWAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
        GATEWAY_API_TOKENS: TEST_API_TOKEN,
        PLATFORM_PERSONAL_TOKEN: DEFAULT_PERSONAL_TOKEN,
        OPERATORS: HARNESS_OPERATOR.entry,
      }),
    );
    const subaccountId = await createTenant(env.sim, { externalRef, name: 'Hooked' });
    await env.pool.query(
      `INSERT INTO tenants (external_ref, name, subaccount_id, status, ` +
        `create_idempotency_key) VALUES ($1, 'Hooked', $2, 'active', $3)`,
      [externalRef, subaccountId, `k-${externalRef}`],
    );
    projectId = await createProject(env.sim, { token: (await createTenantKey(env.sim, subaccountId)).token });
    cliEnv = { TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: HARNESS_OPERATOR.token };
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it(
    'creates a webhook on a tenant project with the personal token and shows each ' + "delivery's outcome and status",
    async () => {
      const created = await runCli(
        ['webhooks', 'create', '--tenant', externalRef, '--project', projectId, '--events', '*', '--json'],
        cliEnv,
      );
      expect(created.code, created.stderr).toBe(0);
      const view = JSON.parse(created.stdout) as { registrationId: string; webhookId: string };
      expect(env.sim.state().webhooks.find((w) => w.id === view.webhookId)).toMatchObject({
        projectId,
        hasSecret: true,
      });

      const emitted = await adminCall(env.sim, 'POST', '/__sim/registry/events', {
        projectId,
        event: 'image.pushed',
        image: 'registry.test/app',
        tag: 'v1',
      });
      const [deliveryId] = (emitted.body.deliveries as Array<{ deliveryId: string }>).map((d) => d.deliveryId);
      await waitFor(
        async () => env.sim.state().webhooks.find((w) => w.id === view.webhookId)!.deliveries,
        (ds) => ds.length === 1 && ds[0]!.status === 'succeeded',
        30_000,
        'the platform to record the delivery',
      );

      const json = await runCli(['webhooks', 'deliveries', view.registrationId, '--json'], cliEnv);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual([
        expect.objectContaining({ deliveryId, event: 'image.pushed', platformStatus: 'succeeded', responseCode: 202 }),
      ]);
      const text = await runCli(['webhooks', 'deliveries', view.registrationId], cliEnv);
      expect(text.stdout).toContain(`${deliveryId} image.pushed platform:succeeded(202)`);

      const deleted = await runCli(['webhooks', 'delete', view.registrationId, '--json'], cliEnv);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(env.sim.state().webhooks.some((w) => w.id === view.webhookId)).toBe(false);
    },
  );

  it("refuses a project that is not the named tenant's, before creating anything", async () => {
    const otherTenant = await createTenant(env.sim, { externalRef: `other-${shape}`, name: 'Other' });
    const foreignProject = await createProject(env.sim, { token: (await createTenantKey(env.sim, otherTenant)).token });
    const before = env.sim.state().webhooks.length;
    const created = await runCli(
      ['webhooks', 'create', '--tenant', externalRef, '--project', foreignProject, '--json'],
      cliEnv,
    );
    expect(created.code).toBe(2);
    expect(created.stderr).toMatch(/not a project of tenant/);
    expect(env.sim.state().webhooks.length).toBe(before);
  });
});
