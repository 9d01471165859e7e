/**
 * Who may do what, from outside: a gateway listening on loopback with one identity of every role,
 * probed over HTTP with a route × caller table generated from the routes the app registered (a new
 * route is in the table by construction). Then the rules a role table alone does not show: the
 * audited actor is the token's name, subscriptions belong to whoever made them, and the server's
 * close delay holds for everyone but admins. Every refusal leaves nothing written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../src/gateway/app.js';
import { PUBLIC } from '../../src/gateway/http/access.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { ROLES, roleAllows, type Role } from '../../src/domain/roles.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import type { LooseJson } from '../harness/sim-calls.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

const identities = Object.fromEntries(ROLES.map((role) => [role, generateOperator(`sec-${role}`, role)])) as Record<
  Role,
  { token: string; entry: string }
>;
const parsed = parseOperatorList(
  Object.values(identities)
    .map((identity) => identity.entry)
    .join(','),
);
if (!parsed.ok) throw new Error(parsed.problems.join('; '));
const directory = createOperatorDirectory(parsed.operators);

type Caller = { label: string; token: string | undefined; role: Role | undefined };
const CALLERS: Caller[] = [
  { label: 'no token', token: undefined, role: undefined },
  { label: 'an unknown token', token: 'tpo_op_not-a-real-token-0123456789abcdef', role: undefined },
  { label: 'a GATEWAY_API_TOKENS backend', token: TEST_API_TOKEN, role: 'backend' },
  ...ROLES.map((role) => ({ label: `a ${role}`, token: identities[role].token, role })),
];

/** A concrete path for a route pattern: every parameter filled with a value that is well formed. */
function pathOf(url: string, overrides: Record<string, string> = {}): string {
  const values: Record<string, string> = {
    externalRef: 'sec-nobody',
    action: 'suspend',
    slot: 'default',
    key: 'sec-key-1',
    id: 'sub_unknown',
    decision: 'approve',
    registrationId: 'whr_unknown',
    operation: 'encode',
    // Plans and their rollouts (a plan no one made: the allowed probes meet 404s, nothing starts).
    name: 'sec-plan',
    version: '1',
    ...overrides,
  };
  return url.replace(/:([A-Za-z]+)/g, (_, name: string) => values[name] ?? 'x');
}

describe('route × role table over HTTP', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const call = (method: string, path: string, token: string | undefined, body?: unknown) =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const counts = async () => {
    const { rows } = await env.pool.query<Record<string, number>>(
      `SELECT (SELECT count(*)::int FROM tenants) AS tenants, (SELECT count(*)::int FROM audit_log) AS audit,
              (SELECT count(*)::int FROM transfer_intents) AS intents,
              (SELECT count(*)::int FROM event_subscriptions) AS subscriptions,
              (SELECT count(*)::int FROM approval_requests) AS approvals`,
    );
    return rows[0]!;
  };

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-routes');
    ({ gateway, url } = await listenGatewayOver(env, { operators: directory, closeDelay: '30d' }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('declares a permission for every route, and only health, metrics, the API document, the codec and the platform webhooks are public', () => {
    const publicRoutes = gateway.routes
      .filter((route) => route.permission === PUBLIC && route.method !== 'HEAD')
      .map((route) => `${route.method} ${route.url}`)
      .sort();
    expect(publicRoutes).toEqual(
      [
        'GET /healthz',
        'GET /metrics',
        'GET /openapi.json',
        'GET /readyz',
        'OPTIONS /codec/:operation',
        'POST /codec/decode',
        'POST /codec/encode',
        'POST /webhooks/registry/:registrationId',
      ].sort(),
    );
    expect(gateway.routes.filter((route) => route.url.startsWith('/v1')).length).toBeGreaterThanOrEqual(20);
    for (const route of gateway.routes.filter((r) => r.url.startsWith('/v1')))
      expect(route.permission, `${route.method} ${route.url}`).not.toBe(PUBLIC);
  });

  it('answers every /v1 route 401 without a known token, 403 to a role without its permission, and lets the others through', async () => {
    const before = await counts();
    const table: string[] = [];
    for (const route of gateway.routes.filter((r) => r.url.startsWith('/v1') && r.method !== 'HEAD')) {
      if (route.permission === PUBLIC) continue;
      // A route whose permission depends on the request (the decision route: the run's kind) is probed per case.
      const probes =
        typeof route.permission === 'string'
          ? [{ permission: route.permission, path: pathOf(route.url) }]
          : route.permission.cases.map((c) => ({
              permission: c.permission,
              path: pathOf(route.url, { run: c.example.replace('acme', 'sec-nobody') }),
            }));
      for (const { permission, path } of probes)
        for (const caller of CALLERS) {
          const expected = caller.role === undefined ? '401' : roleAllows(caller.role, permission) ? 'through' : '403';
          // Refused probes carry a body that would otherwise be acted on; allowed ones get an empty body.
          const response = await call(
            route.method,
            path,
            caller.token,
            route.method === 'GET' ? undefined : expected === 'through' ? {} : { reason: 'probe', amountMicroUsd: '1' },
          );
          const got = response.status === 401 ? '401' : response.status === 403 ? '403' : 'through';
          if (got === '403') expect((await response.json()) as unknown).toMatchObject({ error: { code: 'FORBIDDEN' } });
          else await response.arrayBuffer();
          table.push(
            `${route.method} ${path} as ${caller.label}: ${got}${got === expected ? '' : ` (want ${expected})`}`,
          );
        }
    }
    expect(table.filter((line) => line.includes('(want'))).toEqual([]);
    expect(table.length).toBeGreaterThanOrEqual(20 * CALLERS.length);
    // Nothing any probe did wrote a row (the allowed ones were invalid or aimed at no tenant).
    expect(await counts()).toEqual(before);
  });
});

describe('actor, ownership and the close delay', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const send = (method: string, path: string, token: string, body?: unknown) =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as LooseJson }));

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-actor');
    await env.startOrchestratorWorker();
    ({ gateway, url } = await listenGatewayOver(env, { operators: directory, closeDelay: '30d' }));
    const started = await send('POST', '/v1/tenants', identities.backend.token, {
      externalRef: 'sec-acme',
      name: 'Acme',
    });
    expect(started.status).toBe(202);
    await env.client.workflow.getHandle(started.body.data.workflowId as string).result();
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  const auditOf = async (externalRef: string) =>
    (
      await env.pool.query<{ action: string; actor: string }>(
        `SELECT action, actor FROM audit_log WHERE external_ref = $1::text ORDER BY id`,
        [externalRef],
      )
    ).rows;

  it('records the token name as the actor and refuses a body that names someone else, writing nothing', async () => {
    const before = (await auditOf('sec-acme')).length;
    for (const [path, body, field] of [
      ['/v1/tenants/sec-acme/suspend', { reason: 'pretend', operator: 'alice' }, 'operator'],
      ['/v1/tenants/sec-acme/transfers', { amountMicroUsd: '1000', requestedBy: 'alice' }, 'requestedBy'],
      [
        '/v1/tenants/sec-acme/funding-policy',
        { below: '100', to: '200', maxPerDay: '1000', updatedBy: 'alice' },
        'updatedBy',
      ],
    ] as const) {
      const answer = await fetch(`${url}${path}`, {
        method: path.endsWith('funding-policy') ? 'PUT' : 'POST',
        headers: {
          authorization: `Bearer ${identities.operator.token}`,
          'content-type': 'application/json',
          'idempotency-key': 'sec-actor-1',
        },
        body: JSON.stringify(body),
      });
      expect(answer.status, path).toBe(400);
      expect(((await answer.json()) as { error: { fields: string[] } }).error.fields, path).toEqual([field]);
    }
    expect(await auditOf('sec-acme')).toHaveLength(before);

    const suspended = await send('POST', '/v1/tenants/sec-acme/suspend', identities.operator.token, {
      reason: 'audit',
    });
    expect(suspended.status).toBe(202);
    await env.client.workflow.getHandle(suspended.body.data.workflowId as string).result();
    expect(await auditOf('sec-acme')).toContainEqual({ action: 'tenant.suspended', actor: 'operator:sec-operator' });
  });

  it("keeps one caller's event subscription out of another's reach; an admin may act on it", async () => {
    const made = await send('POST', '/v1/event-subscriptions', identities.backend.token, {
      url: 'https://receiver.example/hooks',
      types: ['tenant.suspended'],
      label: 'billing',
    });
    expect(made.status).toBe(201);
    const id = made.body.data.subscription.id as string;
    expect(made.body.data.subscription.createdBy).toBe('sec-backend');

    const other = identities.operator.token;
    const listed = await send('GET', '/v1/event-subscriptions', other);
    expect(listed.body.data.map((s: { id: string }) => s.id)).not.toContain(id);
    expect((await send('POST', `/v1/event-subscriptions/${id}/rotate-secret`, other, {})).status).toBe(404);
    expect((await send('DELETE', `/v1/event-subscriptions/${id}`, other)).status).toBe(404);
    expect((await send('GET', `/v1/event-deliveries?subscription=${id}`, other)).status).toBe(404);

    const own = await send('GET', '/v1/event-subscriptions', identities.backend.token);
    expect(own.body.data.map((s: { id: string }) => s.id)).toContain(id);
    const { rows } = await env.pool.query(`SELECT status FROM event_subscriptions WHERE id = $1::text`, [id]);
    expect(rows).toEqual([{ status: 'active' }]);

    expect(
      (await send('GET', '/v1/event-subscriptions', identities.admin.token)).body.data.map((s: { id: string }) => s.id),
    ).toContain(id);
    expect((await send('DELETE', `/v1/event-subscriptions/${id}`, identities.admin.token)).status).toBe(200);
  });

  it('refuses a close sooner than CLOSE_DELAY to a backend and an operator, naming after, and starts nothing', async () => {
    for (const role of ['backend', 'operator'] as const) {
      for (const after of ['0', '1s', '29d']) {
        const answer = await send('POST', '/v1/tenants/sec-acme/close', identities[role].token, {
          reason: 'now',
          after,
        });
        expect(answer.status, `${role} ${after}`).toBe(400);
        expect(answer.body.error.fields).toEqual(['after']);
        expect(answer.body.error.message).toMatch(/30d/);
      }
    }
    await expect(env.client.workflow.getHandle('close:sec-acme').describe()).rejects.toThrow();
    const admin = await send('POST', '/v1/tenants/sec-acme/close', identities.admin.token, {
      reason: 'now',
      after: '0',
    });
    expect(admin.status).toBe(202);
  });

  it('shows approval requests to viewers and operators but not to a signup backend', async () => {
    expect((await send('GET', '/v1/approvals', identities.viewer.token)).status).toBe(200);
    expect((await send('GET', '/v1/approvals', identities.operator.token)).status).toBe(200);
    expect((await send('GET', '/v1/approvals', TEST_API_TOKEN)).status).toBe(403);
    expect((await send('POST', '/v1/approvals/apr_x/approve', identities.viewer.token, { reason: 'x' })).status).toBe(
      403,
    );
  });
});
