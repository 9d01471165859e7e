import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../src/gateway/app.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants, platformTransfersOf } from '../harness/top-up-env.js';

const auth = { authorization: `Bearer ${TEST_API_TOKEN}` };

describe('POST /v1/tenants/:ref/transfers with an Idempotency-Key', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const post = (ref: string, key: string | undefined, body: unknown) =>
    fetch(`${url}/v1/tenants/${ref}/transfers`, {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      body: JSON.stringify(body),
    }).then(async (r) => ({
      status: r.status,
      retryAfter: r.headers.get('retry-after'),
      json: (await r.json()) as {
        data?: Record<string, unknown> & { transfer?: Record<string, unknown> };
        error?: { code: string; message: string; fields?: string[] };
      },
    }));
  const untilSettled = async (ref: string, key: string, body: unknown) => {
    for (;;) {
      const answer = await post(ref, key, body);
      if (answer.status !== 409) return answer;
      await new Promise((r) => setTimeout(r, Number(answer.retryAfter ?? '1') * 100));
    }
  };

  beforeAll(async () => {
    env = await createOrchestratorEnv('tu-gw');
    await env.startOrchestratorWorker();
    await onboardTenants(env, ['gw-a', 'gw-b', 'gw-closed']);
    ({ gateway, url } = await listenGatewayOver(env, { publicUrl: 'https://gateway.example' }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it(
    'starts one run for 20 concurrent requests with one key, answers 409 + ' +
      'Retry-After while it runs, then replays the stored result',
    async () => {
      await setFaults(env.sim, [
        { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'delay', delayMs: 1500, count: 1 },
      ]);
      const body = { amountMicroUsd: '1500', reason: 'invoice 77 paid' };
      const answers = await Promise.all(Array.from({ length: 20 }, () => post('gw-a', 'inv-77', body)));
      expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
      const accepted = answers.find((a) => a.status === 202)!;
      expect(accepted.json.data).toMatchObject({
        started: true,
        workflowId: 'fund:gw-a:inv-77',
        statusUrl: 'https://gateway.example/v1/tenants/gw-a/transfers/inv-77',
      });
      for (const other of answers.filter((a) => a.status !== 202)) {
        expect(other.status).toBe(409);
        expect(other.json.error?.code).toBe('TRANSFER_IN_PROGRESS');
        expect(Number(other.retryAfter)).toBeGreaterThan(0);
      }
      await env.client.workflow.getHandle('fund:gw-a:inv-77').result();
      await clearFaults(env.sim);
      const replay = await untilSettled('gw-a', 'inv-77', body);
      expect(replay.status).toBe(200);
      expect(replay.json.data).toMatchObject({
        replayed: true,
        transfer: {
          purpose: 'top-up',
          amountMicroUsd: '1500',
          state: 'succeeded',
          idempotencyKey: 'inv-77',
          requestedBy: 'signup-backend',
          reason: 'invoice 77 paid',
          platformTransferId: expect.any(String),
        },
      });
      const again = await post('gw-a', 'inv-77', body);
      expect(again.json.data).toEqual(replay.json.data);
      expect(platformTransfersOf(env.sim, 'gw-a').map((t) => t.amountMicroUsd)).toEqual(['1500']);
    },
  );

  it('answers 422 naming the key when it comes back with another body, and moves nothing', async () => {
    const reused = await post('gw-a', 'inv-77', { amountMicroUsd: '1600', reason: 'invoice 77 paid' });
    expect(reused.status).toBe(422);
    expect(reused.json.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', fields: ['Idempotency-Key'] });
    expect(reused.json.error?.message).toContain('inv-77');
    expect(platformTransfersOf(env.sim, 'gw-a')).toHaveLength(1);
  });

  it('refuses bad input with one line per problem naming the field, and starts nothing', async () => {
    const cases: Array<[string | undefined, unknown, string[]]> = [
      ['k-0', { amountMicroUsd: '0' }, ['amountMicroUsd']],
      ['k-neg', { amountMicroUsd: '-1' }, ['amountMicroUsd']],
      ['k-frac', { amountMicroUsd: '1.5' }, ['amountMicroUsd']],
      ['k-exp', { amountMicroUsd: '1e6' }, ['amountMicroUsd']],
      ['k-num', { amountMicroUsd: 5 }, ['amountMicroUsd']],
      [undefined, { amountMicroUsd: '5' }, ['Idempotency-Key']],
      ['k'.repeat(256), { amountMicroUsd: '5' }, ['Idempotency-Key']],
      [undefined, { amountMicroUsd: 5, extra: true }, ['Idempotency-Key', 'amountMicroUsd', 'extra']],
    ];
    for (const [key, body, fields] of cases) {
      const answer = await post('gw-b', key, body);
      expect(answer.status, JSON.stringify([key, body])).toBe(400);
      expect(answer.json.error?.code).toBe('INVALID_INPUT');
      expect(answer.json.error?.fields).toEqual(fields);
    }
    expect(await workflowExists(env.client, 'fund:gw-b:k-0')).toBe(false);
    const { rows } = await env.pool.query(
      `SELECT count(*)::int AS n FROM transfer_intents WHERE external_ref = 'gw-b'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('answers 404 for an unknown tenant and 409 for a closed one, with no run and no platform call', async () => {
    const before = env.sim.state().transfers.length;
    const unknown = await post('nobody', 'k-1', { amountMicroUsd: '5' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error?.code).toBe('TENANT_NOT_FOUND');
    await env.pool.query(`UPDATE tenants SET status = 'closing' WHERE external_ref = 'gw-closed'`);
    const closed = await post('gw-closed', 'k-1', { amountMicroUsd: '5' });
    expect(closed.status).toBe(409);
    expect(closed.json.error?.code).toBe('TENANT_CLOSED');
    expect(await workflowExists(env.client, 'fund:gw-closed:k-1')).toBe(false);
    expect(env.sim.state().transfers.length).toBe(before);
  });

  it('lists the ledger: purpose, amount, state, keys, who asked and why', async () => {
    const response = await fetch(`${url}/v1/tenants/gw-a/transfers`, { headers: auth });
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as {
      data: { transfers: Array<Record<string, unknown>>; succeededMicroUsd: string };
    };
    expect(data.succeededMicroUsd).toBe('1500');
    expect(data.transfers).toEqual([
      expect.objectContaining({
        purpose: 'top-up',
        amountMicroUsd: '1500',
        state: 'succeeded',
        idempotencyKey: 'inv-77',
        platformIdempotencyKey: expect.stringMatching(/^tpo-xfer-/),
        platformTransferId: expect.any(String),
        requestedBy: 'signup-backend',
        reason: 'invoice 77 paid',
      }),
    ]);
    const one = await fetch(`${url}/v1/tenants/gw-a/transfers/inv-77`, { headers: auth });
    expect(((await one.json()) as { data: { state: string } }).data.state).toBe('succeeded');
    expect((await fetch(`${url}/v1/tenants/gw-a/transfers/none-such`, { headers: auth })).status).toBe(404);
  });
});
