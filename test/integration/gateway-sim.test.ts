import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { TEST_API_TOKEN, waitFor } from '../harness/gateway-app.js';
import {
  createRegistryWebhook,
  listRegistryDeliveries,
  replaceRegistryWebhook,
  type WebhookManagementDeps,
} from '../../src/client/webhooks/webhook-management.js';
import { startGateway, type RunningGateway } from '../../src/main/gateway.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import {
  adminCall,
  createProject,
  createTenant,
  createTenantKey,
  DEFAULT_PERSONAL_TOKEN,
  type LooseJson,
} from '../harness/sim-calls.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { HARNESS_OPERATOR } from '../harness/operator-gateway.js';
import { freePort } from '../../src/infra/ports.js';
import { generateOperator } from '../../src/secrets/operators.js';

// Identities the gateway knows besides the harness admin: an operator (webhooks.manage) and a backend (not).
const oncall = generateOperator('oncall-hooks', 'operator');
const backend = generateOperator('backend-hooks', 'backend');
// A second operator: a registration is its creator's, so this one is answered 404 for oncall's.
const other = generateOperator('other-hooks', 'operator');

describe('gateway end to end with the simulator: real signed deliveries over a real socket', () => {
  let env: OrchestratorEnv;
  let gateway: RunningGateway;
  let deps: WebhookManagementDeps;
  let projectId: string;
  let cliEnv: Record<string, string>;
  const externalRef = 'hooked-1';

  const emit = async (event: string, tag: string): Promise<string[]> => {
    const response = await adminCall(env.sim, 'POST', '/__sim/registry/events', {
      projectId,
      event,
      image: 'registry.test/app',
      tag,
    });
    expect(response.status).toBe(202);
    return (response.body.deliveries as Array<{ deliveryId: string }>).map((d) => d.deliveryId);
  };
  const inboxStates = async (ids: string[]) =>
    (
      await env.pool.query(
        `SELECT delivery_id, state, process_count FROM webhook_inbox WHERE delivery_id = ANY($1::text[])`,
        [ids],
      )
    ).rows as Array<{
      delivery_id: string;
      state: string;
      process_count: number;
    }>;
  const allProcessed = (ids: string[]) =>
    waitFor(
      () => inboxStates(ids),
      (rows) => rows.length === ids.length && rows.every((r) => r.state === 'processed'),
      60_000,
      `${ids.length} deliveries processed`,
    );

  beforeAll(async () => {
    env = await createOrchestratorEnv('gw-sim', { choices: { deliveryBaseDelayMs: 50 } });
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
        OPERATORS: [HARNESS_OPERATOR.entry, oncall.entry, backend.entry, other.entry].join(','),
      }),
    );
    cliEnv = { TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: HARNESS_OPERATOR.token };
    const subaccountId = await createTenant(env.sim, { externalRef, name: 'Hooked' });
    await env.pool.query(
      `INSERT INTO tenants (external_ref, name, subaccount_id, status, ` +
        `create_idempotency_key) VALUES ($1, 'Hooked', $2, 'active', 'k-hooked-1')`,
      [externalRef, subaccountId],
    );
    projectId = await createProject(env.sim, { token: (await createTenantKey(env.sim, subaccountId)).token });
    deps = {
      pool: env.pool,
      platform: createPlatformClient({
        baseUrl: env.sim.apiBase,
        personalToken: DEFAULT_PERSONAL_TOKEN,
        timeoutMs: 5_000,
      }),
      vault: createVault(parseMasterKeys(env.secretsKeys)),
      publicUrl: gateway.url,
    };
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it("delivers the simulator's signed events to the gateway, verified and processed once each", async () => {
    const webhook = await createRegistryWebhook(deps, { externalRef, projectId, label: 'orchestrator', events: ['*'] });
    expect(webhook).toMatchObject({
      status: 'active',
      externalRef,
      url: `${gateway.url}/webhooks/registry/${webhook.registrationId}`,
    });
    const simHook = env.sim.state().webhooks.find((w) => w.id === webhook.webhookId);
    expect(simHook).toMatchObject({ hasSecret: true, url: webhook.url });

    const ids = [
      ...(await emit('image.pushed', 'v1')),
      ...(await emit('image.scan.completed', 'v1')),
      ...(await emit('image.deleted', 'v0')),
    ];
    expect(ids).toHaveLength(3);
    const rows = await allProcessed(ids);
    expect(rows.every((r) => r.process_count === 1)).toBe(true);
    await waitFor(
      async () => env.sim.state().webhooks.find((w) => w.id === webhook.webhookId)!.deliveries,
      (ds) => ds.length === 3 && ds.every((d) => d.status === 'succeeded'),
      30_000,
      'platform sees 3 successes',
    );
    const { rows: audit } = await env.pool.query(
      `SELECT action FROM audit_log WHERE external_ref = $1 AND action LIKE 'registry.%' ORDER BY id`,
      [externalRef],
    );
    expect(audit.map((r) => r.action).sort()).toEqual([
      'registry.image.deleted',
      'registry.image.pushed',
      'registry.image.scan.completed',
    ]);

    const deliveries = await listRegistryDeliveries(deps, { registrationId: webhook.registrationId });
    expect(deliveries.map((d) => [d.platformStatus, d.inboxState])).toEqual(Array(3).fill(['succeeded', 'processed']));
    // The secret exists only sealed: not in the view, not in our tables as text.
    const { rows: sealed } = await env.pool.query(`SELECT sealed FROM webhook_secrets WHERE registration_id = $1`, [
      webhook.registrationId,
    ]);
    expect(sealed).toHaveLength(1);
    expect(sealed[0].sealed).toMatch(/^v1\./);
  });

  it(
    'rotates the secret by replacing the webhook while events flow, losing no ' + 'delivery and processing each once',
    async () => {
      const webhook = await createRegistryWebhook(deps, {
        externalRef,
        projectId,
        label: 'rotating',
        events: ['image.pushed'],
      });
      const emitted: string[] = [];
      let flowing = true;
      const traffic = (async () => {
        for (let i = 0; flowing || i < 3; i += 1) {
          emitted.push(...(await emit('image.pushed', `r${i}`)));
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const replaced = await replaceRegistryWebhook(deps, { registrationId: webhook.registrationId });
      await new Promise((resolve) => setTimeout(resolve, 200));
      flowing = false;
      await traffic;
      expect(replaced).toMatchObject({
        status: 'active',
        registrationId: webhook.registrationId,
        url: webhook.url,
        previousWebhookId: webhook.webhookId,
      });
      expect(replaced.webhookId).not.toBe(webhook.webhookId);
      const simHooks = env.sim.state().webhooks.filter((w) => w.url === webhook.url);
      expect(simHooks.map((w) => w.id)).toEqual([replaced.webhookId]);

      const rows = await allProcessed(emitted);
      expect(rows.every((r) => r.process_count === 1)).toBe(true);
      const after = await emit('image.pushed', 'after');
      await allProcessed(after);
    },
  );

  it('manages webhooks with tenantctl webhooks create|list|update|deliveries|delete, through the gateway', async () => {
    const created = await runCli(
      [
        'webhooks',
        'create',
        '--tenant',
        externalRef,
        '--project',
        projectId,
        '--events',
        'image.copied,image.moved',
        '--label',
        'cli',
        '--json',
      ],
      cliEnv,
    );
    expect(created.code, created.stderr).toBe(0);
    const view = JSON.parse(created.stdout) as { registrationId: string; webhookId: string; events: string[] };
    expect(view.events).toEqual(['image.copied', 'image.moved']);
    expect(created.stdout).not.toMatch(/secret/i);

    const updated = await runCli(
      ['webhooks', 'update', view.registrationId, '--events', 'image.copied', '--json'],
      cliEnv,
    );
    expect(updated.code, updated.stderr).toBe(0);
    expect(env.sim.state().webhooks.find((w) => w.id === view.webhookId)!.events).toEqual(['image.copied']);

    await allProcessed(await emit('image.copied', 'c1'));
    const deliveries = await runCli(['webhooks', 'deliveries', view.registrationId, '--json'], cliEnv);
    expect(deliveries.code, deliveries.stderr).toBe(0);
    expect(JSON.parse(deliveries.stdout)).toEqual([
      expect.objectContaining({ event: 'image.copied', inboxState: 'processed' }),
    ]);

    const deleted = await runCli(['webhooks', 'delete', view.registrationId, '--json'], cliEnv);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(env.sim.state().webhooks.some((w) => w.id === view.webhookId)).toBe(false);
    const listed = await runCli(['webhooks', 'list', '--tenant', externalRef, '--json'], cliEnv);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as Array<{ registrationId: string }>).map((w) => w.registrationId)).not.toContain(
      view.registrationId,
    );
  });

  it("checks the tenant's project in the gateway, with the parent key from our records", async () => {
    // The operator's shell holds no platform credential at all: the gateway checks the project with the key
    // the workers use.
    const recorded = await env.pool.query(`SELECT count(*)::int AS n FROM parent_keys`);
    expect(recorded.rows[0].n).toBeGreaterThan(0);
    const otherSubaccount = await createTenant(env.sim, { externalRef: 'hooked-other', name: 'Other' });
    const otherProject = await createProject(env.sim, {
      token: (await createTenantKey(env.sim, otherSubaccount)).token,
    });
    const before = await env.pool.query(`SELECT count(*)::int AS n FROM webhook_registrations`);
    const hooksBefore = env.sim.state().webhooks.length;
    const refused = await runCli(
      ['webhooks', 'create', '--tenant', externalRef, '--project', otherProject, '--json'],
      cliEnv,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`project ${otherProject} is not a project of tenant ${externalRef}`);
    expect((await env.pool.query(`SELECT count(*)::int AS n FROM webhook_registrations`)).rows[0].n).toBe(
      before.rows[0].n,
    );
    expect(env.sim.state().webhooks.length).toBe(hooksBefore);

    const accepted = await runCli(
      ['webhooks', 'create', '--tenant', externalRef, '--project', projectId, '--label', 'recorded-key', '--json'],
      cliEnv,
    );
    expect(accepted.code, accepted.stderr).toBe(0);
    const view = JSON.parse(accepted.stdout) as { registrationId: string };
    expect((await runCli(['webhooks', 'delete', view.registrationId, '--json'], cliEnv)).code).toBe(0);
  });

  it('lets an operator create, rotate and delete a webhook over /v1, audited under its name; a backend gets 403 and writes nothing', async () => {
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const response = await fetch(`${gateway.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, body: (await response.json()) as LooseJson };
    };
    const footprint = async () => ({
      rows: (
        await env.pool.query(
          `SELECT (SELECT count(*)::int FROM webhook_registrations) AS registrations,
                  (SELECT count(*)::int FROM webhook_secrets) AS secrets,
                  (SELECT count(*)::int FROM audit_log WHERE action LIKE 'webhook.%') AS audit`,
        )
      ).rows[0] as Record<string, number>,
      platform: env.sim.state().webhooks.length,
    });

    const created = await call('POST', '/v1/webhooks', oncall.token, { externalRef, projectId, label: 'http' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const view = created.body.data as { registrationId: string; webhookId: string; url: string; status: string };
    expect(view).toMatchObject({ status: 'active', url: `${gateway.url}/webhooks/registry/${view.registrationId}` });
    expect(JSON.stringify(created.body)).not.toMatch(/secret/i);
    expect(env.sim.state().webhooks.find((w) => w.id === view.webhookId)).toMatchObject({ hasSecret: true });

    const before = await footprint();
    const path = `/v1/webhooks/${view.registrationId}`;
    for (const [method, target, body] of [
      ['POST', '/v1/webhooks', { externalRef, projectId }],
      ['GET', '/v1/webhooks', undefined],
      ['PATCH', path, { label: 'taken' }],
      ['POST', `${path}/rotate-secret`, {}],
      ['DELETE', path, undefined],
      ['GET', `${path}/deliveries`, undefined],
    ] as const) {
      const refused = await call(method, target, backend.token, body);
      expect(refused.status, `${method} ${target}`).toBe(403);
      expect(refused.body).toMatchObject({ error: { code: 'FORBIDDEN' } });
    }
    // Another operator finds nothing of oncall's registration: not in its list, 404 for every action.
    const otherList = await call('GET', '/v1/webhooks', other.token);
    expect((otherList.body.data as Array<{ registrationId: string }>).map((w) => w.registrationId)).not.toContain(
      view.registrationId,
    );
    for (const [method, target, body] of [
      ['PATCH', path, { label: 'taken' }],
      ['POST', `${path}/rotate-secret`, {}],
      ['DELETE', path, undefined],
      ['GET', `${path}/deliveries`, undefined],
    ] as const) {
      const hidden = await call(method, target, other.token, body);
      expect(hidden.status, `${method} ${target}`).toBe(404);
      expect(hidden.body).toMatchObject({ error: { code: 'WEBHOOK_NOT_FOUND' } });
    }
    // An admin sees every registration, with who made it.
    const adminList = await call('GET', '/v1/webhooks', HARNESS_OPERATOR.token);
    expect(adminList.body.data).toContainEqual(
      expect.objectContaining({ registrationId: view.registrationId, createdBy: 'oncall-hooks' }),
    );
    // Naming someone else as the operator is refused before anything happens.
    const named = await call('POST', '/v1/webhooks', oncall.token, { externalRef, projectId, operator: 'ops' });
    expect(named.status).toBe(400);
    expect(await footprint()).toEqual(before);

    const rotated = await call('POST', `${path}/rotate-secret`, oncall.token, {});
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const replaced = rotated.body.data as { webhookId: string; previousWebhookId: string; status: string };
    expect(replaced).toMatchObject({ status: 'active', previousWebhookId: view.webhookId });
    expect(
      env.sim
        .state()
        .webhooks.filter((w) => w.url === view.url)
        .map((w) => w.id),
    ).toEqual([replaced.webhookId]);

    const deleted = await call('DELETE', path, oncall.token);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body.data).toMatchObject({ status: 'deleted' });
    expect(env.sim.state().webhooks.some((w) => w.url === view.url)).toBe(false);
    expect((await call('DELETE', '/v1/webhooks/whr_0000000000000000', oncall.token)).body).toMatchObject({
      error: { code: 'WEBHOOK_NOT_FOUND' },
    });

    const { rows: audit } = await env.pool.query(
      `SELECT actor, action FROM audit_log WHERE details->>'registrationId' = $1 ORDER BY id`,
      [view.registrationId],
    );
    expect(audit).toEqual([
      { actor: 'operator:oncall-hooks', action: 'webhook.created' },
      { actor: 'operator:oncall-hooks', action: 'webhook.replaced' },
      { actor: 'operator:oncall-hooks', action: 'webhook.deleted' },
    ]);
  });

  it('refuses webhook management for a tenant that is not in our records, before any platform call', async () => {
    const before = env.sim.state().stats.requestsTotal;
    await expect(
      createRegistryWebhook(deps, { externalRef: 'not-ours', projectId, label: 'x', events: ['*'] }),
    ).rejects.toMatchObject({ name: 'TenantNotFoundError' });
    expect(env.sim.state().stats.requestsTotal).toBe(before);
  });
});
