import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { buildTestGateway, listenOnLoopback, TEST_API_TOKEN, TEST_CODEC_TOKEN } from '../harness/gateway-app.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { TENANTCTL } from '../harness/cli.js';
import { workflowExists as workflowExistsIn } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

const auth = { authorization: `Bearer ${TEST_API_TOKEN}` };

describe('gateway trigger, status, lifecycle, codec and health API', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const build = (overrides: Parameters<typeof buildTestGateway>[0]['options'] = {}, taskQueue = env.taskQueue) =>
    buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue,
      keys: parseMasterKeys(env.secretsKeys),
      options: overrides,
    });
  const workflowExists = (workflowId: string) => workflowExistsIn(env.client, workflowId);

  beforeAll(async () => {
    env = await createOrchestratorEnv('gw-api');
    await env.startOrchestratorWorker();
    gateway = build({ publicUrl: 'https://gateway.example' });
    url = await listenOnLoopback(gateway);
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('creates one tenant when 200 identical POST /v1/tenants arrive at once', async () => {
    const body = JSON.stringify({ externalRef: 'burst-200', name: 'Burst Two Hundred' });
    const answers = await Promise.all(
      Array.from({ length: 200 }, () =>
        fetch(`${url}/v1/tenants`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body,
        }).then(async (r) => ({
          status: r.status,
          location: r.headers.get('location'),
          json: (await r.json()) as { data: { started: boolean; statusUrl: string } },
        })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(200).fill(202));
    expect(answers.filter((a) => a.json.data.started)).toHaveLength(1);
    expect(answers[0]!.location).toBe('https://gateway.example/v1/tenants/burst-200');
    await env.client.workflow.getHandle('onboard:burst-200').result();
    expect(env.sim.state().subaccounts.filter((s) => s.externalRef === 'burst-200')).toHaveLength(1);

    const status = await fetch(`${url}/v1/tenants/burst-200`, { headers: auth });
    expect(status.status).toBe(200);
    const text = await status.text();
    expect(JSON.parse(text)).toMatchObject({
      data: { externalRef: 'burst-200', record: { status: 'active' } },
      meta: { requestId: expect.stringMatching(/^req_/) },
    });
    expect(text).not.toMatch(/svsk_|sealed/);
  });

  it(
    'answers 401 with nothing leaked to every unauthenticated or wrongly ' + 'authenticated call, and starts nothing',
    async () => {
      const routes = [
        { method: 'POST', url: '/v1/tenants', payload: { externalRef: 'intruder-1', name: 'Intruder' } },
        { method: 'GET', url: '/v1/tenants/burst-200' },
        { method: 'POST', url: '/v1/tenants/burst-200/suspend' },
        { method: 'POST', url: '/v1/tenants/burst-200/rotate', payload: { slot: 'default' } },
      ] as const;
      const headerVariants: Array<Record<string, string>> = [
        {},
        { authorization: 'Bearer wrong-token' },
        { authorization: `Basic ${Buffer.from(`user:${TEST_API_TOKEN}`).toString('base64')}` },
        { authorization: `Bearer ${TEST_API_TOKEN.slice(0, -1)}` },
        { authorization: `Bearer ${TEST_API_TOKEN}x` },
        { authorization: 'Bearer ' },
        { authorization: `Bearer ${TEST_CODEC_TOKEN}` },
        { authorization: TEST_API_TOKEN },
      ];
      const messages = new Set<string>();
      for (const route of routes) {
        for (const headers of headerVariants) {
          const response = await gateway.app.inject({ ...route, headers });
          expect(response.statusCode, `${route.method} ${route.url} ${JSON.stringify(headers)}`).toBe(401);
          expect(response.headers['www-authenticate']).toBe('Bearer');
          const body = response.json();
          expect(Object.keys(body).sort()).toEqual(['error', 'meta']);
          expect(Object.keys(body.error)).toEqual(['code', 'message']);
          expect(body.error.code).toBe('UNAUTHORIZED');
          messages.add(body.error.message);
          expect(response.body).not.toContain(TEST_API_TOKEN.slice(0, 12));
          expect(response.body).not.toMatch(/burst-200|intruder|suspend|rotate/);
        }
      }
      expect(messages.size).toBe(1);
      expect(await workflowExists('onboard:intruder-1')).toBe(false);
      expect(await workflowExists('suspend:burst-200')).toBe(false);
      expect(await workflowExists('rotate:burst-200:default')).toBe(false);
      const codec = await gateway.app.inject({
        method: 'POST',
        url: '/codec/decode',
        headers: { authorization: `Bearer ${TEST_API_TOKEN}` },
        payload: { payloads: [] },
      });
      expect(codec.statusCode).toBe(401);
    },
  );

  it(
    'refuses bad onboarding input naming the fields, a conflicting name with 409, bad ' +
      'JSON with 400, and an unknown tenant with 404',
    async () => {
      const bad = await gateway.app.inject({
        method: 'POST',
        url: '/v1/tenants',
        headers: auth,
        payload: { externalRef: ' bad ref', fundingMicroUsd: 5 },
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toMatchObject({
        code: 'INVALID_INPUT',
        fields: expect.arrayContaining(['externalRef', 'name', 'fundingMicroUsd']),
      });
      const conflict = await gateway.app.inject({
        method: 'POST',
        url: '/v1/tenants',
        headers: auth,
        payload: { externalRef: 'burst-200', name: 'Someone Else' },
      });
      expect(conflict.statusCode).toBe(409);
      expect(conflict.json().error.code).toBe('EXTERNAL_REF_CONFLICT');
      const json = await gateway.app.inject({
        method: 'POST',
        url: '/v1/tenants',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: '{"externalRef":',
      });
      expect(json.statusCode).toBe(400);
      expect(json.json().error.code).toBe('INVALID_JSON');
      const unknown = await gateway.app.inject({ method: 'GET', url: '/v1/tenants/nobody-here', headers: auth });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().error.code).toBe('TENANT_NOT_FOUND');
    },
  );

  it(
    'starts lifecycle workflows by name under their business ids, and maps unknown ' +
      'refs to 404 with no platform call and no start',
    async () => {
      // Nobody polls this queue: we check what was started, not what it does.
      const idle = build({}, `gw-nobody-${Date.now()}`);
      try {
        const before = env.sim.state().stats.requestsTotal;
        for (const action of ['suspend', 'resume', 'close', 'rotate']) {
          const response = await idle.app.inject({
            method: 'POST',
            url: `/v1/tenants/ghost-tenant/${action}`,
            headers: auth,
            payload: { reason: 'a valid reason' },
          });
          expect(response.statusCode).toBe(404);
          expect(response.json().error.code).toBe('TENANT_NOT_FOUND');
        }
        expect(env.sim.state().stats.requestsTotal).toBe(before);
        for (const id of [
          'suspend:ghost-tenant',
          'resume:ghost-tenant',
          'close:ghost-tenant',
          'rotate:ghost-tenant:default',
        ])
          expect(await workflowExists(id)).toBe(false);

        const expected = [
          [
            'suspend',
            { reason: 'unpaid', operator: 'signup-backend' },
            'suspendTenant',
            'suspend:burst-200',
            { externalRef: 'burst-200', reason: 'unpaid', operator: 'signup-backend' },
          ],
          [
            'resume',
            { reason: 'paid now' },
            'resumeTenant',
            'resume:burst-200',
            { externalRef: 'burst-200', reason: 'paid now', operator: 'signup-backend' },
          ],
          [
            'close',
            { reason: 'customer left' },
            'closeTenant',
            'close:burst-200',
            { externalRef: 'burst-200', reason: 'customer left', operator: 'signup-backend' },
          ],
          [
            'rotate',
            { slot: 'ci' },
            'rotateTenantKey',
            'rotate:burst-200:ci',
            { externalRef: 'burst-200', slot: 'ci', emergency: false },
          ],
        ] as const;
        for (const [action, payload, type, workflowId, input] of expected) {
          const response = await idle.app.inject({
            method: 'POST',
            url: `/v1/tenants/burst-200/${action}`,
            headers: auth,
            ...(payload ? { payload } : {}),
          });
          expect(response.statusCode, action).toBe(202);
          expect(response.json().data).toMatchObject({ action, workflowId, statusUrl: '/v1/tenants/burst-200' });
          const again = await idle.app.inject({
            method: 'POST',
            url: `/v1/tenants/burst-200/${action}`,
            headers: auth,
            ...(payload ? { payload } : {}),
          });
          expect(again.statusCode).toBe(202);
          const handle = env.client.workflow.getHandle(workflowId);
          expect((await handle.describe()).type).toBe(type);
          const history = await handle.fetchHistory();
          const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
          expect(JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString('utf8'))).toEqual(input);
          await handle.terminate('gateway test: checked the start only');
        }
        const badSlot = await idle.app.inject({
          method: 'POST',
          url: '/v1/tenants/burst-200/rotate',
          headers: auth,
          payload: { slot: 'Not A Slot' },
        });
        expect(badSlot.json().error).toMatchObject({ code: 'INVALID_INPUT', fields: ['slot'] });
        const badAction = await idle.app.inject({
          method: 'POST',
          url: '/v1/tenants/burst-200/explode',
          headers: auth,
        });
        expect(badAction.statusCode).toBe(404);
      } finally {
        await idle.app.close();
      }
    },
  );

  it('serves the payload codec to authorized operators with the CORS the Temporal Web UI needs', async () => {
    const plain = {
      payloads: [
        {
          metadata: { encoding: Buffer.from('json/plain').toString('base64') },
          data: Buffer.from('{"externalRef":"x"}').toString('base64'),
        },
      ],
    };
    const operator = {
      authorization: `Bearer ${TEST_CODEC_TOKEN}`,
      origin: 'http://localhost:8233',
      'x-namespace': 'default',
    };
    const encoded = await gateway.app.inject({
      method: 'POST',
      url: '/codec/encode',
      headers: operator,
      payload: plain,
    });
    expect(encoded.statusCode).toBe(200);
    expect(encoded.headers['access-control-allow-origin']).toBe('http://localhost:8233');
    const sealed = encoded.json();
    expect(Buffer.from(sealed.payloads[0].metadata.encoding, 'base64').toString()).toBe('binary/encrypted');
    const decoded = await gateway.app.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: operator,
      payload: sealed,
    });
    expect(decoded.json()).toEqual(plain);

    const preflight = await gateway.app.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: {
        origin: 'http://localhost:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': 'http://localhost:8233',
      'access-control-allow-methods': 'POST, OPTIONS',
    });
    expect(String(preflight.headers['access-control-allow-headers'])).toMatch(
      /content-type.*x-namespace.*authorization/,
    );
    const foreign = await gateway.app.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    const anonymous = await gateway.app.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: { origin: 'http://localhost:8233' },
      payload: sealed,
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['access-control-allow-origin']).toBe('http://localhost:8233'); // so the UI can show why
    const garbage = await gateway.app.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: operator,
      payload: { payloads: 'no' },
    });
    expect(garbage.json().error.code).toBe('INVALID_INPUT');

    // With no operator tokens configured, only loopback clients (a local UI) are served.
    const local = build({ codecTokens: [] });
    try {
      expect(
        (await local.app.inject({ method: 'POST', url: '/codec/decode', payload: sealed, remoteAddress: '127.0.0.1' }))
          .statusCode,
      ).toBe(200);
      expect(
        (await local.app.inject({ method: 'POST', url: '/codec/decode', payload: sealed, remoteAddress: '10.1.2.3' }))
          .statusCode,
      ).toBe(401);
    } finally {
      await local.app.close();
    }
  });

  it('reports health, readiness of Postgres and Temporal, Prometheus metrics and its OpenAPI description', async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });

    const brokenPool = createPool('postgres://nobody:nothing@127.0.0.1:1/none');
    const broken = buildTestGateway({
      pool: brokenPool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.secretsKeys),
    });
    try {
      const notReady = await broken.app.inject({ method: 'GET', url: '/readyz' });
      expect(notReady.statusCode).toBe(503);
      expect(notReady.json()).toEqual({ status: 'not_ready', checks: { postgres: 'unreachable', temporal: 'ok' } });
    } finally {
      await broken.app.close();
      await brokenPool.end();
    }

    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await metrics.text();
    expect(text).toMatch(/^gateway_http_requests_total\{method="POST",route="\/v1\/tenants",status="202"\} \d+$/m);
    expect(text).toMatch(
      /^gateway_http_request_duration_seconds_bucket\{method="GET",route="\/healthz",le="\+Inf"\} \d+$/m,
    );
    expect(text).toMatch(/^gateway_webhook_inbox_deliveries\{state="pending"\} \d+$/m);

    const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(openapi).toMatchObject({ openapi: '3.1.0' });
    for (const path of [
      '/v1/tenants',
      '/v1/tenants/{externalRef}',
      // One route for suspend, resume, close and rotate: the action is a path parameter.
      '/v1/tenants/{externalRef}/{action}',
      '/webhooks/registry/{registrationId}',
      '/codec/decode',
      '/readyz',
      '/metrics',
    ]) {
      expect(Object.keys(openapi.paths)).toContain(path);
    }
    const notFound = await fetch(`${url}/nothing-here`);
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toMatchObject({
      error: { code: 'ROUTE_NOT_FOUND' },
      meta: { requestId: notFound.headers.get('x-request-id') },
    });
  });

  it('runs as a process with `tenantctl gateway` and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [TENANTCTL, 'gateway'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/root',
        DATA_DIR: '/nonexistent-stack-dir',
        LOG_LEVEL: 'warn',
        ...env.cliEnv,
        GATEWAY_PORT: '0',
        GATEWAY_API_TOKENS: TEST_API_TOKEN,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const base = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /gateway listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      void exited.then((code) => reject(new Error(`tenantctl gateway exited early (${code}): ${output}`)));
    });
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const unauthorized = await fetch(`${base}/v1/tenants/burst-200`);
    expect(unauthorized.status).toBe(401);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
