/**
 * Ownership everywhere (issue 45, Build 5): every route that names an event subscription or a registry webhook
 * registration answers 404 to anyone but the caller that made it and admins — replays and delivery lists
 * included — and re-sends, changes or reveals nothing. Before this, replaying `signup-backend`'s subscription as
 * another backend or operator answered 202 `{"reopened":0}` and a delivery list naming it answered 200 `[]`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/pool.js';
import { emitEvent, eventIdOf, fanOutEvents } from '../../src/db/events-store.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { callAs } from '../harness/operator-gateway.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { createProject, createTenant, createTenantKey, DEFAULT_PERSONAL_TOKEN } from '../harness/sim-calls.js';

const otherBackend = generateOperator('own-backend', 'backend');
const oncall = generateOperator('own-oncall', 'operator');
const otherOperator = generateOperator('own-other', 'operator');
const admin = generateOperator('own-admin', 'admin');
const parsed = parseOperatorList([otherBackend.entry, oncall.entry, otherOperator.entry, admin.entry].join(','));
if (!parsed.ok) throw new Error(parsed.problems.join('; '));

type Probe = readonly [method: string, path: string, body?: unknown];

describe('a subscription or a registration answers 404 to anyone but its creator and admins', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  let subscriptionId: string;
  let eventId: string;
  const deliveries = async () =>
    (
      await env.pool.query<{ state: string; replays: number }>(
        `SELECT state, replays FROM event_deliveries WHERE subscription_id = $1::text ORDER BY id`,
        [subscriptionId],
      )
    ).rows;
  const subscriptionRow = async () =>
    (
      await env.pool.query(
        `SELECT status, secret_generation, created_by FROM event_subscriptions s
           LEFT JOIN LATERAL (SELECT max(generation) AS secret_generation
                                FROM event_subscription_secrets WHERE subscription_id = s.id) g ON true
          WHERE s.id = $1::text`,
        [subscriptionId],
      )
    ).rows;

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-ownership');
    ({ gateway, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      publicUrl: 'https://gateway.example',
      webhookPlatform: createPlatformClient({
        baseUrl: env.sim.apiBase,
        personalToken: DEFAULT_PERSONAL_TOKEN,
        timeoutMs: 5_000,
      }),
    }));
    // signup-backend's subscription, with a delivery of one event that was delivered already.
    const made = await callAs(url, 'POST', '/v1/event-subscriptions', TEST_API_TOKEN, {
      url: 'https://billing.example/hooks',
      types: ['tenant.suspended'],
    });
    expect(made.status).toBe(201);
    subscriptionId = made.json.data.subscription.id as string;
    const event = await withTransaction(env.pool, (tx) =>
      emitEvent(tx, { type: 'tenant.suspended', externalRef: 'own-1', data: { reason: 'test' } }),
    );
    eventId = eventIdOf(event.id);
    await fanOutEvents(env.pool, 100);
    await env.pool.query(
      `UPDATE event_deliveries SET state = 'delivered', delivered_at = now() WHERE subscription_id = $1::text`,
      [subscriptionId],
    );
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it("answers every route naming signup-backend's subscription 404 to another backend and another operator, re-sending nothing", async () => {
    const before = { deliveries: await deliveries(), subscription: await subscriptionRow() };
    expect(before.deliveries).toEqual([{ state: 'delivered', replays: 0 }]);
    const probes: Probe[] = [
      ['POST', '/v1/events/replay', { since: '2000-01-01T00:00:00Z', subscriptionId }],
      ['POST', `/v1/events/${eventId}/replay`, { subscriptionId }],
      ['GET', `/v1/event-deliveries?subscription=${subscriptionId}`],
      ['GET', `/v1/event-deliveries?subscription=${subscriptionId}&failed=true`],
      ['POST', `/v1/event-subscriptions/${subscriptionId}/rotate-secret`, {}],
      ['DELETE', `/v1/event-subscriptions/${subscriptionId}`],
    ];
    for (const caller of [otherBackend, otherOperator]) {
      for (const [method, path, body] of probes) {
        const answer = await callAs(url, method, path, caller.token, body);
        expect(answer.status, `${caller.entry.split(':')[0]} ${method} ${path}`).toBe(404);
        expect(answer.json.error).toMatchObject({ code: 'SUBSCRIPTION_NOT_FOUND' });
      }
      const listed = await callAs(url, 'GET', '/v1/event-subscriptions?all=true', caller.token);
      expect(listed.json.data.map((s: { id: string }) => s.id)).not.toContain(subscriptionId);
    }
    // tenantctl is a client of the same routes: the same 404.
    for (const args of [
      ['events', 'replay', eventId, '--subscription', subscriptionId],
      ['events', 'replay', '--since', '2000-01-01T00:00:00Z', '--subscription', subscriptionId],
      ['events', 'deliveries', '--subscription', subscriptionId],
    ]) {
      const viaCli = await runCli(args, { TENANTCTL_GATEWAY_URL: url, TENANTCTL_OPERATOR_TOKEN: otherOperator.token });
      expect(viaCli.code, args.join(' ')).not.toBe(0);
      expect(viaCli.stderr, args.join(' ')).toMatch(/No live event subscription with this id/);
    }
    expect({ deliveries: await deliveries(), subscription: await subscriptionRow() }).toEqual(before);
  });

  it('lets its creator and an admin name it, and answers a subscription that does not exist 404 to them too', async () => {
    for (const token of [TEST_API_TOKEN, admin.token]) {
      const listed = await callAs(url, 'GET', `/v1/event-deliveries?subscription=${subscriptionId}`, token);
      expect(listed.status).toBe(200);
      expect(listed.json.data).toHaveLength(1);
      // A replay from a time after every event: allowed, and nothing to re-send.
      const replay = await callAs(url, 'POST', '/v1/events/replay', token, {
        since: '2999-01-01T00:00:00Z',
        subscriptionId,
      });
      expect(replay.status).toBe(202);
      expect(replay.json.data).toEqual({ reopened: 0 });
      for (const [method, path, body] of [
        ['POST', `/v1/events/${eventId}/replay`, { subscriptionId: 'esub_doesnotexist' }],
        ['POST', '/v1/events/replay', { since: '2000-01-01T00:00:00Z', subscriptionId: 'esub_doesnotexist' }],
        ['GET', '/v1/event-deliveries?subscription=esub_doesnotexist'],
      ] as const) {
        const answer = await callAs(url, method, path, token, body);
        expect(answer.status, `${method} ${path}`).toBe(404);
        expect(answer.json.error).toMatchObject({ code: 'SUBSCRIPTION_NOT_FOUND' });
      }
    }
    expect(await deliveries()).toEqual([{ state: 'delivered', replays: 0 }]);
  });

  it("answers every route naming an operator's registry webhook 404 to another operator, changing nothing", async () => {
    const subaccountId = await createTenant(env.sim, { externalRef: 'own-hooked', name: 'Hooked' });
    await env.pool.query(
      `INSERT INTO tenants (external_ref, name, subaccount_id, status, create_idempotency_key)
       VALUES ('own-hooked', 'Hooked', $1::text, 'active', 'k-own-hooked')`,
      [subaccountId],
    );
    const projectId = await createProject(env.sim, { token: (await createTenantKey(env.sim, subaccountId)).token });
    const created = await callAs(url, 'POST', '/v1/webhooks', oncall.token, { externalRef: 'own-hooked', projectId });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const path = `/v1/webhooks/${created.json.data.registrationId as string}`;
    const footprint = async () => ({
      rows: (
        await env.pool.query(
          `SELECT (SELECT count(*)::int FROM webhook_secrets) AS secrets,
                  (SELECT count(*)::int FROM audit_log WHERE action LIKE 'webhook.%') AS audit,
                  (SELECT string_agg(status || ':' || label, ',') FROM webhook_registrations) AS registrations`,
        )
      ).rows[0],
      platform: env.sim.state().webhooks.map((w) => w.id),
    });
    const before = await footprint();
    for (const [method, target, body] of [
      ['PATCH', path, { label: 'taken' }],
      ['POST', `${path}/rotate-secret`, {}],
      ['DELETE', path, undefined],
      ['GET', `${path}/deliveries`, undefined],
    ] as const) {
      const hidden = await callAs(url, method, target, otherOperator.token, body);
      expect(hidden.status, `${method} ${target}`).toBe(404);
      expect(hidden.json.error).toMatchObject({ code: 'WEBHOOK_NOT_FOUND' });
    }
    const listed = await callAs(url, 'GET', '/v1/webhooks?includeDeleted=true', otherOperator.token);
    expect(JSON.stringify(listed.json.data)).not.toContain(created.json.data.registrationId as string);
    expect(await footprint()).toEqual(before);
    for (const token of [oncall.token, admin.token])
      expect((await callAs(url, 'GET', `${path}/deliveries`, token)).status).toBe(200);
  });
});
