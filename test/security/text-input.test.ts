import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../src/gateway/app.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import { listenGatewayOver, TEST_API_TOKEN, TEST_CODEC_TOKEN } from '../harness/gateway-app.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants } from '../harness/top-up-env.js';

/**
 * Issue 31: a 202 means the run can succeed. Text no record can hold (NUL), text that lies (bidi overrides, C1
 * controls), ids that are no path segment (`.`, `..`) and malformed keys are refused at the edge with a 4xx naming the
 * field, and nothing is written, started or sent.
 */
const auth = { authorization: `Bearer ${TEST_API_TOKEN}` };
type Answer = { status: number; json: { data?: unknown; error?: { code: string; fields?: string[] } } };

describe('free text and ids at the gateway edge', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Answer['json'] };
  };
  const count = async (sql: string) => ((await env.pool.query<{ n: number }>(sql)).rows[0]!.n as number) ?? 0;
  const written = async () => ({
    audit: await count(`SELECT count(*)::int AS n FROM audit_log`),
    intents: await count(`SELECT count(*)::int AS n FROM transfer_intents`),
    subscriptions: await count(`SELECT count(*)::int AS n FROM event_subscriptions`),
    policies: await count(`SELECT count(*)::int AS n FROM funding_policies`),
    platformCalls: env.sim.state().transfers.length,
  });
  const refused = (answer: Answer, field: string, status = 400) => {
    expect(answer.status, JSON.stringify(answer.json)).toBe(status);
    expect(answer.json.error?.fields).toEqual([field]);
  };

  beforeAll(async () => {
    env = await createOrchestratorEnv('gw-text');
    await env.startOrchestratorWorker();
    await onboardTenants(env, ['tx-a', 'tx-closed']);
    ({ gateway, url } = await listenGatewayOver(env, {
      publicUrl: 'https://gateway.example',
      codecHosts: ['gateway.example'],
    }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('refuses a suspend reason with NUL, a C1 control or a bidi override, and starts nothing', async () => {
    const before = await written();
    for (const reason of ['billing\u0000 dispute', 'billing\u0085 dispute', 'billing \u202Eetupsid']) {
      refused(await send('POST', '/v1/tenants/tx-a/suspend', { reason }), 'reason');
      refused(await send('POST', '/v1/tenants/tx-a/close', { reason }), 'reason');
    }
    expect(await workflowExists(env.client, 'suspend:tx-a')).toBe(false);
    expect(await workflowExists(env.client, 'close:tx-a')).toBe(false);
    expect(await written()).toEqual(before);
    // tenantctl and the client helpers go through the same schema: the run is never started.
    await expect(
      startLifecycle(
        env.client,
        'suspend',
        { externalRef: 'tx-a', reason: 'bad\u0000reason' },
        {
          taskQueue: env.taskQueue,
        },
      ),
    ).rejects.toBeInstanceOf(InvalidInputError);
    expect(await workflowExists(env.client, 'suspend:tx-a')).toBe(false);
  });

  it('refuses a top-up reason with NUL or a bidi override: no intent, no run, no platform call', async () => {
    const before = await written();
    for (const [key, reason] of [
      ['nul-1', 'invoice\u0000 12'],
      ['rlo-1', 'invoice \u202E21'],
      ['c1-1', 'invoice\u009b12'],
    ] as const) {
      refused(
        await send('POST', '/v1/tenants/tx-a/transfers', { amountMicroUsd: '100', reason }, { 'idempotency-key': key }),
        'reason',
      );
      expect(await workflowExists(env.client, `fund:tx-a:${key}`)).toBe(false);
    }
    expect(await written()).toEqual(before);
  });

  it('refuses an event subscription label with NUL or a C1 control with 400 (it was a 500)', async () => {
    const before = await written();
    for (const label of ['orders\u0000', 'orders\u0085', 'two\nlines'])
      refused(
        await send('POST', '/v1/event-subscriptions', { url: 'https://receiver.example/hook', types: ['*'], label }),
        'label',
      );
    expect(await written()).toEqual(before);
  });

  it('answers a malformed idempotency key on the transfers routes with 400 naming it (it was a 500)', async () => {
    refused(await send('GET', '/v1/tenants/tx-a/transfers/bad%20key'), 'key');
    refused(await send('GET', '/v1/tenants/tx-a/transfers/a%3Ab'), 'key');
    refused(await send('GET', '/v1/tenants/tx-a/transfers/%00'), 'key');
    const before = await written();
    refused(
      await send('POST', '/v1/tenants/tx-a/transfers', { amountMicroUsd: '100' }, { 'idempotency-key': 'bad key!' }),
      'Idempotency-Key',
    );
    expect(await written()).toEqual(before);
  });

  it('refuses . and .. (and separators) as a project id before any run or platform call', async () => {
    for (const projectId of ['.', '..', '...', 'a/b', '..\\x', '%2e%2e', '..;']) {
      const answer = await send('POST', '/v1/tenants/tx-a/rotate', {
        deployer: { kind: 'project-env', projectId },
      });
      refused(answer, 'deployer.projectId');
    }
    expect(await workflowExists(env.client, 'rotate:tx-a:default')).toBe(false);
  });

  it('refuses a NUL anywhere in a JSON body at the parser, naming the field path', async () => {
    const before = await written();
    refused(
      await send('POST', '/v1/tenants', { externalRef: 'tx-nul', name: 'N', options: { extra: ['ok', 'x\u0000'] } }),
      'options.extra.1',
    );
    refused(await send('POST', '/v1/tenants', '{"externalRef":"tx-nul","name":"a\\ud800"}'), 'name');
    expect(await workflowExists(env.client, 'onboard:tx-nul')).toBe(false);
    expect(await written()).toEqual(before);
  });

  it('refuses a funding policy on a closing or closed tenant with 409 naming its state, and writes nothing', async () => {
    const policy = { below: '1000', to: '5000', maxPerDay: '10000' };
    for (const status of ['closing', 'closed']) {
      await env.pool.query(`UPDATE tenants SET status = $1 WHERE external_ref = 'tx-closed'`, [status]);
      const before = await written();
      const answer = await send('PUT', '/v1/tenants/tx-closed/funding-policy', policy);
      expect(answer.status).toBe(409);
      expect(answer.json.error?.code).toBe('TENANT_CLOSED');
      expect(JSON.stringify(answer.json.error)).toContain(status);
      expect(await written()).toEqual(before);
    }
    expect((await send('PUT', '/v1/tenants/tx-a/funding-policy', policy)).status).toBe(200);
  });

  it('answers ids and query values no record can hold with a 4xx, never a 500', async () => {
    const probes: Array<[string, string, unknown?]> = [
      ['DELETE', '/v1/event-subscriptions/%00'],
      ['POST', '/v1/event-subscriptions/%00/rotate-secret', {}],
      ['POST', '/v1/event-subscriptions/sub_x/rotate-secret', { overlapSeconds: 'soon' }],
      ['GET', '/v1/event-deliveries?subscription=%00'],
      ['GET', '/v1/event-deliveries?event=not-an-event'],
      ['GET', '/v1/event-deliveries?event=%00'],
      ['POST', '/v1/events/%00/replay', {}],
      ['POST', '/v1/events/replay', { since: '2026-13-45T99:00:00Z' }],
      ['POST', '/v1/approvals/%00/approve', { reason: 'looks right' }],
      ['GET', '/v1/tenants/%00'],
      ['GET', '/v1/tenants/tx-a/keys'],
      ['POST', '/v1/tenants/tx-a/keys/%00/issue', {}],
      ['POST', '/v1/tenants/tx-a/keys/default/revoke', { force: true, reason: 'leak\u0085' }],
    ];
    for (const [method, path, body] of probes) {
      const answer = await send(method, path, body);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.json)}`).toBeLessThan(500);
    }
  });

  it('answers the codec only under the gateway names (DNS rebinding)', async () => {
    const decode = (host: string) =>
      gateway.app.inject({
        method: 'POST',
        url: '/codec/decode',
        headers: { host, authorization: `Bearer ${TEST_CODEC_TOKEN}` },
        payload: { payloads: [] },
      });
    for (const host of ['evil.example', 'evil.example:8080', '127.0.0.1.nip.io', 'localhost.evil.example'])
      expect((await decode(host)).statusCode, host).toBe(403);
    const preflight = await gateway.app.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: { host: 'evil.example', origin: 'http://localhost:8233', 'access-control-request-method': 'POST' },
    });
    expect(preflight.statusCode).toBe(403);
    for (const host of ['localhost', '127.0.0.1:4000', '[::1]:4000', 'gateway.example'])
      expect((await decode(host)).statusCode, host).toBe(200);
  });
});
