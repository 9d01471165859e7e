import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFundingPolicy } from '../../src/client/money/funding-policy.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { DEFAULT_PARENT_ID } from '../../src/sim/index.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { failureTypeOf, workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startPlatformQueueWorker } from '../harness/platform-queue-worker.js';
import { onboardTenants, platformTransfersOf, waitForTopUpStage } from '../harness/top-up-env.js';

/**
 * Issue 31: one caller's oversized transfer must not block funding for the whole fleet. An amount
 * above TRANSFER_MAX_MICRO_USD is refused at the edge (and by the worker) with nothing written; a
 * platform INSUFFICIENT_BALANCE for a huge-but-allowed amount holds only that amount or more.
 */
const WORKER_LIMIT = '100000000000000000000000000000'; // 10^29: high, so a huge amount reaches the platform
const HUGE = '99999999999999999999999999999'; // within it, far beyond any parent's balance
const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '10m', unknownTransferDeadline: '1m' };
const auth = { authorization: `Bearer ${TEST_API_TOKEN}` };

interface Answer {
  status: number;
  json: {
    data?: Record<string, unknown> & { transfer?: Record<string, unknown> };
    error?: { code: string; message: string; fields?: string[] };
  };
}

describe('the largest single transfer and the parent shortfall by amount', () => {
  let env: OrchestratorEnv;
  let platformWorker: { stop(): Promise<void> } | undefined;
  const gateways: GatewayApp[] = [];
  let defaultUrl: string;
  let highUrl: string;

  const call = (base: string, method: string, path: string, body?: unknown, key?: string): Promise<Answer> =>
    fetch(`${base}${path}`, {
      method,
      headers: {
        ...auth,
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      body: JSON.stringify(body ?? {}),
    }).then(async (r) => ({ status: r.status, json: (await r.json()) as Answer['json'] }));
  const topUp = (base: string, ref: string, key: string, amountMicroUsd: string) =>
    call(base, 'POST', `/v1/tenants/${ref}/transfers`, { amountMicroUsd }, key);
  const settled = async (base: string, ref: string, key: string, amountMicroUsd: string) => {
    for (;;) {
      const answer = await topUp(base, ref, key, amountMicroUsd);
      // 202: started by this call; 409 TRANSFER_IN_PROGRESS: still running. Asked again until it settles.
      if (answer.status !== 202 && answer.json.error?.code !== 'TRANSFER_IN_PROGRESS') return answer;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const records = async () => {
    const count = async (sql: string) => (await env.pool.query<{ n: number }>(sql)).rows[0]!.n;
    return {
      intents: await count(`SELECT count(*)::int AS n FROM transfer_intents`),
      tenants: await count(`SELECT count(*)::int AS n FROM tenants`),
      policies: await count(`SELECT count(*)::int AS n FROM funding_policies`),
      audit: await count(`SELECT count(*)::int AS n FROM audit_log`),
      platformTransfers: env.sim.state().transfers.length,
    };
  };
  const parentRecord = async () =>
    (
      await env.pool.query<{ since: Date | null; amount: string | null }>(
        `SELECT insufficient_since AS since, insufficient_micro_usd::text AS amount FROM funding_parent`,
      )
    ).rows[0]!;

  beforeAll(async () => {
    env = await createOrchestratorEnv('xfer-limits', {}, { transfers: { maxMicroUsd: WORKER_LIMIT } });
    await env.startOrchestratorWorker();
    platformWorker = await startPlatformQueueWorker(env);
    await onboardTenants(env, ['lim-a', 'lim-b', 'lim-c', 'lim-d']);
    const defaults = await listenGatewayOver(env);
    const high = await listenGatewayOver(env, { maxTransferMicroUsd: WORKER_LIMIT });
    gateways.push(defaults.gateway, high.gateway);
    defaultUrl = defaults.url;
    highUrl = high.url;
  });
  afterAll(async () => {
    for (const gateway of gateways) await gateway.app.close();
    await platformWorker?.stop();
    await env?.close();
  });

  it('refuses an amount above TRANSFER_MAX_MICRO_USD at every /v1 edge, naming the field and the limit; nothing is written', async () => {
    const before = await records();
    const limitRule = /must be at most 10000000000 micro-USD \(TRANSFER_MAX_MICRO_USD\)/;

    for (const amount of ['10000000001', '1'.repeat(30)]) {
      const refused = await topUp(defaultUrl, 'lim-a', `over-${amount.length}`, amount);
      expect(refused.status, JSON.stringify(refused.json)).toBe(400);
      expect(refused.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['amountMicroUsd'] });
      expect(refused.json.error?.message).toMatch(limitRule);
      expect(await workflowExists(env.client, `fund:lim-a:over-${amount.length}`)).toBe(false);
    }

    const onboarding = await call(defaultUrl, 'POST', '/v1/tenants', {
      externalRef: 'lim-new',
      name: 'Too Rich',
      fundingMicroUsd: '10000000001',
    });
    expect(onboarding.status).toBe(400);
    expect(onboarding.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['fundingMicroUsd'] });
    expect(onboarding.json.error?.message).toMatch(limitRule);
    expect(await workflowExists(env.client, 'onboard:lim-new')).toBe(false);

    // An auto top-up from an empty wallet moves `to` at once: `to` above the limit is refused.
    const policy = await call(defaultUrl, 'PUT', '/v1/tenants/lim-a/funding-policy', {
      below: '1000',
      to: '10000000001',
      maxPerDay: '20000000002',
    });
    expect(policy.status).toBe(400);
    expect(policy.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['to'] });
    expect(policy.json.error?.message).toMatch(limitRule);

    expect(await records()).toEqual(before);
  });

  it('holds a start sent straight to Temporal to the worker’s own limit, with nothing written', async () => {
    const before = await records();
    const handle = await env.client.workflow.start('fundTenant', {
      taskQueue: env.taskQueue,
      workflowId: 'fund:lim-a:direct-over',
      args: [{ externalRef: 'lim-a', idempotencyKey: 'direct-over', amountMicroUsd: '1'.repeat(30) }],
    });
    const failure = await handle.result().catch((error: unknown) => error);
    expect(failureTypeOf(failure)).toBe('INVALID_INPUT');
    expect(await records()).toEqual(before);
  });

  it(
    'after an INSUFFICIENT_BALANCE for a huge amount, smaller top-ups, onboardings and auto top-ups go ' +
      'ahead while an equal or larger one is refused naming the amount; a success that large clears it',
    async () => {
      // The huge top-up reaches the platform, is refused, and waits; the parent's record names its amount.
      const huge = await topUp(highUrl, 'lim-a', 'huge-1', HUGE);
      expect(huge.status, JSON.stringify(huge.json)).toBe(202);
      await waitForTopUpStage(env, 'fund:lim-a:huge-1', 'waiting_for_parent_funds');
      expect(await parentRecord()).toMatchObject({ since: expect.any(Date), amount: HUGE });

      // A smaller top-up goes ahead, and does not clear the record (it proves only that 2500 was covered).
      const small = await settled(highUrl, 'lim-b', 'small-1', '2500');
      expect(small.status, JSON.stringify(small.json)).toBe(200);
      expect(small.json.data?.transfer).toMatchObject({ amountMicroUsd: '2500', state: 'succeeded' });
      expect(platformTransfersOf(env.sim, 'lim-b').map((t) => t.amountMicroUsd)).toEqual(['2500']);
      expect((await parentRecord()).amount).toBe(HUGE);

      // An onboarding with funding below the refused amount passes its preflight and completes.
      const onboarding = await call(highUrl, 'POST', '/v1/tenants', {
        externalRef: 'lim-fresh',
        name: 'Fresh',
        fundingMicroUsd: '3000',
      });
      expect(onboarding.status, JSON.stringify(onboarding.json)).toBe(202);
      const onboarded = await env.client.workflow.getHandle('onboard:lim-fresh').result();
      expect(onboarded).toMatchObject({ status: 'active' });
      expect(platformTransfersOf(env.sim, 'lim-fresh').map((t) => t.amountMicroUsd)).toEqual(['3000']);

      // The sweep is not stopped: a small auto top-up starts, one of the refused amount or more waits.
      await setFundingPolicy(env.pool, 'lim-c', { below: '1000', to: '2000', maxPerDay: '100000', updatedBy: 'test' });
      await setFundingPolicy(
        env.pool,
        'lim-d',
        { below: '1000', to: WORKER_LIMIT, maxPerDay: WORKER_LIMIT, updatedBy: 'test' },
        { maxTransferMicroUsd: WORKER_LIMIT },
      );
      const sweep = (await env.client.workflow.execute('autoTopUpSweep', {
        taskQueue: env.taskQueue,
        workflowId: 'sweep-lim-1',
        args: [{ pageSize: 10, options: FAST }],
      })) as { started: number; parentShort: number; stoppedBy: string | null };
      expect(sweep).toMatchObject({ started: 1, parentShort: 1, stoppedBy: null });
      for (;;) {
        const transfers = platformTransfersOf(env.sim, 'lim-c').map((t) => t.amountMicroUsd);
        const { rows: open } = await env.pool.query(
          `SELECT 1 FROM transfer_intents WHERE external_ref = 'lim-c' AND state = 'pending'`,
        );
        if (transfers.length === 1 && open.length === 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(platformTransfersOf(env.sim, 'lim-c').map((t) => t.amountMicroUsd)).toEqual(['2000']);

      // Equal or larger: refused before anything starts, naming the refused amount.
      const before = await records();
      for (const [key, amount] of [
        ['equal-1', HUGE],
        ['larger-1', WORKER_LIMIT],
      ] as const) {
        const refused = await topUp(highUrl, 'lim-b', key, amount);
        expect(refused.status, JSON.stringify(refused.json)).toBe(409);
        expect(refused.json.error?.code).toBe('PARENT_INSUFFICIENT_BALANCE');
        expect(refused.json.error?.message).toContain(`${HUGE} micro-USD`);
        expect(await workflowExists(env.client, `fund:lim-b:${key}`)).toBe(false);
      }
      const broke = await call(highUrl, 'POST', '/v1/tenants', {
        externalRef: 'lim-broke',
        name: 'Broke',
        fundingMicroUsd: HUGE,
      });
      expect(broke.status).toBe(202);
      const failure = await env.client.workflow
        .getHandle('onboard:lim-broke')
        .result()
        .catch((error: unknown) => error);
      expect(failureTypeOf(failure)).toBe('PREFLIGHT_FAILED');
      expect(JSON.stringify((failure as { cause?: { message?: string } }).cause?.message)).toContain(
        `${HUGE} micro-USD`,
      );
      expect(await records()).toEqual(before);

      // The parent is funded: the huge top-up's own retry succeeds, and that clears the record.
      await fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paidMicroUsd: WORKER_LIMIT }),
      });
      await env.client.workflow
        .getHandle('fund:lim-a:huge-1')
        .executeUpdate('parentFunded', { args: [{ operator: 'carol', reason: 'wired funds' }] });
      expect(await env.client.workflow.getHandle('fund:lim-a:huge-1').result()).toMatchObject({ state: 'succeeded' });
      expect(await parentRecord()).toEqual({ since: null, amount: null });
      const { rows } = await env.pool.query(
        `SELECT actor, details->>'refusedMicroUsd' AS refused FROM audit_log WHERE action = 'parent.funded'`,
      );
      expect(rows).toEqual([{ actor: 'worker', refused: HUGE }]);
    },
  );
});
