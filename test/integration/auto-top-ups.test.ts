import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFundingPolicy, setParentCap } from '../../src/client/money/funding-policy.js';
import { startTopUp } from '../../src/client/money/start-top-up.js';
import { DEFAULT_PARENT_ID } from '../../src/sim/index.js';
import { runCli } from '../harness/cli.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants, platformTransfersOf } from '../harness/top-up-env.js';
import { startPlatformQueueWorker } from '../harness/platform-queue-worker.js';

const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1m', unknownTransferDeadline: '1m' };
const sum = (amounts: string[]) => amounts.reduce((s, a) => s + BigInt(a), 0n);

async function settled(env: OrchestratorEnv, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await env.pool.query(
      `SELECT count(*)::int AS n FROM transfer_intents WHERE state IN ('pending', 'unknown', 'needs_operator')`,
    );
    if (rows[0].n === 0) return;
    if (Date.now() > deadline) throw new Error(`${rows[0].n} transfers still open`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function waitForRows(env: OrchestratorEnv, sql: string, count: number, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await env.pool.query(sql);
    if (rows.length >= count) return;
    if (Date.now() > deadline) throw new Error(`waited for ${count} rows of ${sql}; have ${rows.length}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function sweep(env: OrchestratorEnv, id: string) {
  return env.client.workflow.execute('autoTopUpSweep', {
    taskQueue: env.taskQueue,
    workflowId: id,
    args: [{ pageSize: 4, options: FAST }],
  }) as Promise<{ started: number; stoppedBy: string | null; parentShort?: number }>;
}

describe('auto top-up within spend caps', () => {
  let env: OrchestratorEnv;
  let platformWorker: { stop(): Promise<void> };
  const tenants = Array.from({ length: 10 }, (_, i) => `cap-${i}`);
  beforeAll(async () => {
    env = await createOrchestratorEnv('auto-top-ups');
    await env.startOrchestratorWorker();
    platformWorker = await startPlatformQueueWorker(env);
    await onboardTenants(env, [...tenants, 'broke-a', 'broke-b', 'bad-input']);
  });
  afterAll(async () => {
    await platformWorker?.stop();
    await env?.close();
  });

  it(
    'keeps every tenant and the parent within their daily caps while 50 sweeps and ' +
      '100 manual top-ups race through lost responses',
    async () => {
      for (const ref of tenants)
        await setFundingPolicy(env.pool, ref, {
          below: '1000',
          to: '4000',
          maxPerDay: '10000',
          maxPerMonth: '20000',
          updatedBy: 'test',
        });
      await setParentCap(env.pool, { maxPerDay: '60000', updatedBy: 'test' });
      await setFaults(env.sim, [
        { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', probability: 0.2 },
      ]);
      const manual = tenants.flatMap((ref) =>
        Array.from({ length: 10 }, (_, i) => ({
          externalRef: ref,
          idempotencyKey: `manual-${i}`,
          amountMicroUsd: '3000',
          requestedBy: 'billing',
          options: FAST,
        })),
      );
      const [sweeps, topUps] = await Promise.all([
        Promise.all(Array.from({ length: 50 }, (_, i) => sweep(env, `sweep-race-${i}`))),
        Promise.all(
          manual.map(async (input) => (await startTopUp(env.client, input, { taskQueue: env.taskQueue })).result()),
        ),
      ]);
      await settled(env);
      await clearFaults(env.sim);

      let parentTotal = 0n;
      for (const ref of tenants) {
        const onBooks = sum(platformTransfersOf(env.sim, ref).map((t) => t.amountMicroUsd));
        expect(onBooks, ref).toBeLessThanOrEqual(10000n);
        parentTotal += onBooks;
        const { rows } = await env.pool.query(
          `SELECT coalesce(sum(amount_micro_usd), 0)::text AS s FROM transfer_intents WHERE ` +
            `external_ref = $1 AND state = 'succeeded'`,
          [ref],
        );
        expect(rows[0].s, `${ref}: our ledger and the platform's books`).toBe(onBooks.toString());
      }
      expect(parentTotal).toBeLessThanOrEqual(60000n);
      // Demand far above the caps: they bound the total, and every refusal is visible and audited.
      expect(parentTotal).toBeGreaterThan(0n);
      const refused = topUps.filter((r) => r.state === 'cap_refused');
      expect(refused.length).toBeGreaterThan(0);
      const { rows: audited } = await env.pool.query(
        `SELECT count(*)::int AS n FROM audit_log WHERE action = 'transfer.cap_refused'`,
      );
      expect(audited[0].n).toBeGreaterThanOrEqual(refused.length);
      expect(sweeps.every((s) => s.stoppedBy === null)).toBe(true);
      // Every platform transfer went out under one of our intents' keys, once.
      const keys = env.sim.state().transfers.map((t) => t.idempotencyKey);
      expect(new Set(keys).size).toBe(keys.length);
    },
  );

  it(
    "stops on the parent's INSUFFICIENT_BALANCE with one visible state, and resumes " + 'after tenantctl parent-funded',
    async () => {
      for (const ref of ['broke-a', 'broke-b'])
        await setFundingPolicy(env.pool, ref, { below: '1000', to: '2000', maxPerDay: '100000', updatedBy: 'test' });
      await setParentCap(env.pool, { maxPerDay: null, updatedBy: 'test' });
      for (const ref of tenants) await env.pool.query(`DELETE FROM funding_policies WHERE external_ref = $1`, [ref]);
      const setParentBalance = (paidMicroUsd: string) =>
        fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ paidMicroUsd }),
        });
      await setParentBalance('10');
      expect((await sweep(env, 'sweep-broke-1')).started).toBe(2);
      // The sweep only starts the top-ups: wait for both to end. Each either met the parent's balance
      // (its intent cancelled) or, when it started after the other's refusal was recorded, was skipped
      // for that refusal before any call: which one depends on timing, not on the rules.
      const history = await env.client.workflow.getHandle('sweep-broke-1').fetchHistory();
      const children = history.events!.flatMap((event) => {
        const id = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
        return id ? [id] : [];
      });
      expect(children).toHaveLength(2);
      const ends = (await Promise.all(children.map((id) => env.client.workflow.getHandle(id).result()))) as Array<{
        state: string;
        refusedBy: string | null;
      }>;
      expect(ends.map((end) => [end.state, end.refusedBy])).toEqual([
        ['skipped', 'parent_insufficient'],
        ['skipped', 'parent_insufficient'],
      ]);
      const { rows: parent } = await env.pool.query(`SELECT insufficient_since IS NOT NULL AS set FROM funding_parent`);
      expect(parent).toEqual([{ set: true }]);
      const { rows: intents } = await env.pool.query(
        `SELECT state, failure_code FROM transfer_intents WHERE external_ref LIKE 'broke-%' AND kind = 'auto'`,
      );
      expect(intents.length).toBeGreaterThan(0);
      expect(intents.every((r) => r.state === 'cancelled' && r.failure_code === 'INSUFFICIENT_BALANCE')).toBe(true);

      // The refused amount (2000) or more waits; the sweep starts neither, and says so.
      const stopped = await sweep(env, 'sweep-broke-2');
      expect(stopped).toMatchObject({ stoppedBy: null, started: 0, parentShort: 2 });

      await setParentBalance('100000000');
      const funded = await runCli(['parent-funded', '--reason', 'wired the parent'], env.cliEnv);
      expect(funded.code, funded.stderr).toBe(0);
      expect(funded.stdout).toMatch(/insufficient-balance state is cleared/);
      const resumed = await sweep(env, 'sweep-broke-3');
      expect(resumed.started).toBe(2);
      await waitForRows(
        env,
        `SELECT 1 FROM transfer_intents WHERE external_ref LIKE 'broke-%' AND kind = 'auto' AND state = 'succeeded'`,
        2,
      );
      expect(platformTransfersOf(env.sim, 'broke-a').map((t) => t.amountMicroUsd)).toEqual(['2000']);
      expect(platformTransfersOf(env.sim, 'broke-b').map((t) => t.amountMicroUsd)).toEqual(['2000']);
    },
  );

  it('manages a policy over /v1 as a signup backend does: put, get, delete; bad input named, nothing written', async () => {
    const { gateway, url } = await listenGatewayOver(env);
    try {
      const call = async (method: string, ref: string, body?: unknown) => {
        const response = await fetch(`${url}/v1/tenants/${ref}/funding-policy`, {
          method,
          headers: {
            authorization: `Bearer ${TEST_API_TOKEN}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return {
          status: response.status,
          body: (await response.json()) as {
            data?: { policy?: Record<string, unknown> };
            error?: { code: string; fields?: string[] };
          },
        };
      };
      const rowsOf = async (ref: string) =>
        (await env.pool.query(`SELECT count(*)::int AS n FROM funding_policies WHERE external_ref = $1`, [ref])).rows[0]
          .n;

      for (const [body, field] of [
        [{ below: '500', to: '500', maxPerDay: '10' }, 'below'],
        [{ below: '1', to: '5', maxPerDay: '0' }, 'maxPerDay'],
        [{ below: '1', to: '5', maxPerDay: '10', maxPerMonth: '-3' }, 'maxPerMonth'],
        [{ below: '1', to: '5', maxPerDay: '10', surprise: true }, ''],
      ] as const) {
        const refused = await call('PUT', 'cap-9', body);
        expect(refused.status, JSON.stringify(refused.body)).toBe(400);
        expect(refused.body.error?.code).toBe('INVALID_INPUT');
        if (field) expect(refused.body.error?.fields).toContain(field);
      }
      expect((await call('PUT', 'nobody-here', { below: '1', to: '5', maxPerDay: '10' })).status).toBe(404);
      expect(await rowsOf('cap-9')).toBe(0);
      expect(await rowsOf('nobody-here')).toBe(0);

      const set = await call('PUT', 'cap-9', { below: '100', to: '500', maxPerDay: '1000' });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      expect(set.body.data?.policy).toMatchObject({ below: '100', to: '500', maxPerDay: '1000', maxPerMonth: null });
      const shown = await call('GET', 'cap-9');
      expect(shown.status).toBe(200);
      expect(shown.body.data?.policy).toMatchObject({ below: '100', to: '500', maxPerDay: '1000' });
      const cleared = await call('DELETE', 'cap-9');
      expect(cleared.status).toBe(200);
      expect(await rowsOf('cap-9')).toBe(0);
    } finally {
      await gateway.app.close();
    }
  });

  it('refuses a bad policy naming the field (tenantctl and /v1 share the rule), writing nothing', async () => {
    for (const [args, flag] of [
      [['--below', '5000', '--to', '5000', '--max-per-day', '10'], '--below: must be less than to'],
      [['--below', '1', '--to', '5', '--max-per-day', '0'], '--max-per-day: must be'],
      [['--below', '1', '--to', '5', '--max-per-day', '10', '--max-per-month', '0'], '--max-per-month: must be'],
      [['--below', '1.5', '--to', '5', '--max-per-day', '10'], '--below: must be'],
    ] as const) {
      const result = await runCli(['funding', 'policy', 'set', 'bad-input', ...args], env.cliEnv);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`error: ${flag}`);
    }
    const unknown = await runCli(
      ['funding', 'policy', 'set', 'nobody', '--below', '1', '--to', '5', '--max-per-day', '10'],
      env.cliEnv,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no tenant with this external ref/i);
    const { rows } = await env.pool.query(
      `SELECT count(*)::int AS n FROM funding_policies WHERE external_ref IN ('bad-input', 'nobody')`,
    );
    expect(rows[0].n).toBe(0);

    const ok = await runCli(
      ['funding', 'policy', 'set', 'bad-input', '--below', '100', '--to', '500', '--max-per-day', '1000', '--json'],
      env.cliEnv,
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      // Who set it is the token's name (the harness gateway's admin), not a flag.
      policy: { below: '100', to: '500', maxPerDay: '1000', maxPerMonth: null, updatedBy: 'ops' },
    });
    const cleared = await runCli(['funding', 'policy', 'clear', 'bad-input'], env.cliEnv);
    expect(cleared.stdout).toMatch(/cleared/);
  });
});
