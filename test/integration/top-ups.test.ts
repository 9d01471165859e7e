import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyKeyReusedError, startTopUp } from '../../src/client/money/start-top-up.js';
import { DEFAULT_PARENT_ID } from '../../src/sim/index.js';
import { refusal } from '../harness/decisions.js';
import { failureTypeOf, workflowExists } from '../harness/onboarding-checks.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants, platformTransfersOf, waitForTopUpStage } from '../harness/top-up-env.js';

const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1m', unknownTransferDeadline: '2s' };

describe('top-ups through fundTenant', () => {
  let env: OrchestratorEnv;
  const topUp = (
    externalRef: string,
    idempotencyKey: string,
    amountMicroUsd: string,
    extra: Record<string, unknown> = {},
  ) =>
    startTopUp(
      env.client,
      { externalRef, idempotencyKey, amountMicroUsd, requestedBy: 'alice', ...extra },
      { taskQueue: env.taskQueue },
    );

  beforeAll(async () => {
    env = await createOrchestratorEnv('top-ups');
    await env.startOrchestratorWorker();
    await onboardTenants(env, ['tu-a', 'tu-lost', 'tu-op', 'tu-closed', 'tu-broke'], '1000');
  });
  afterAll(async () => env?.close());

  it('moves a top-up once and answers a second start under the same key with the same run', async () => {
    const first = await topUp('tu-a', 'inv-1001', '2500', { reason: 'invoice 1001 paid' });
    const result = await first.result();
    expect(result).toMatchObject({
      state: 'succeeded',
      amountMicroUsd: '2500',
      kind: 'top-up',
      transferId: expect.any(String),
    });
    const again = await topUp('tu-a', 'inv-1001', '2500', { reason: 'invoice 1001 paid' });
    expect(again.started).toBe(false);
    expect(await again.result()).toEqual(result);
    expect(platformTransfersOf(env.sim, 'tu-a').map((t) => t.amountMicroUsd)).toEqual(['1000', '2500']);
    const { rows } = await env.pool.query(
      `SELECT kind, caller_key, requested_by, reason, state, amount_micro_usd::text AS ` +
        `amount FROM transfer_intents WHERE external_ref = 'tu-a' ORDER BY id`,
    );
    expect(rows).toEqual([
      { kind: 'initial', caller_key: null, requested_by: null, reason: null, state: 'succeeded', amount: '1000' },
      {
        kind: 'top-up',
        caller_key: 'inv-1001',
        requested_by: 'alice',
        reason: 'invoice 1001 paid',
        state: 'succeeded',
        amount: '2500',
      },
    ]);
  });

  it('refuses a reused key with another amount or reason, and starts nothing', async () => {
    await expect(topUp('tu-a', 'inv-1001', '2600', { reason: 'invoice 1001 paid' })).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    await expect(topUp('tu-a', 'inv-1001', '2500', { reason: 'another reason' })).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    expect(platformTransfersOf(env.sim, 'tu-a')).toHaveLength(2);
  });

  it('settles a top-up whose response was lost from the wallet, never by a second debit', async () => {
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
    ]);
    const result = await (await topUp('tu-lost', 'lost-1', '700', { options: FAST })).result();
    await clearFaults(env.sim);
    expect(result.state).toBe('succeeded');
    expect(platformTransfersOf(env.sim, 'tu-lost').map((t) => t.amountMicroUsd)).toEqual(['1000', '700']);
    const { rows } = await env.pool.query(`SELECT state, resolution FROM transfer_intents WHERE caller_key = 'lost-1'`);
    expect(rows).toEqual([{ state: 'succeeded', resolution: 'wallet-transfer-list' }]);
  });

  it(
    'asks an operator when a top-up stays unknown, refuses a malformed verdict, and ' + 'applies a good one once',
    async () => {
      await setFaults(env.sim, [
        { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
        { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
        {
          method: 'POST',
          path: '/subaccounts/*/wallet/transfers',
          mode: 'error-before-commit',
          status: 503,
          code: 'UNAVAILABLE',
        },
      ]);
      const handle = await topUp('tu-op', 'op-1', '900', { options: FAST });
      const waiting = await waitForTopUpStage(env, handle.workflowId, 'needs_operator');
      expect(waiting.waitingFor).toMatch(/resolve-transfer tu-op --key op-1/);
      const bad = await refusal(handle, 'resolveTransfer', {
        outcome: 'maybe',
        operator: 'bob',
        reason: 'seen on the wallet',
      });
      expect(bad.type).toBe('INVALID_DECISION');
      expect(bad.problems.join('\n')).toMatch(/^outcome:/m);
      await clearFaults(env.sim);
      const answer = await handle.executeUpdate('resolveTransfer', {
        args: [{ outcome: 'applied', operator: 'bob', reason: 'seen on the wallet' }],
      });
      expect(answer).toMatchObject({ transferState: 'succeeded' });
      expect((await handle.result()).state).toBe('succeeded');
      expect(platformTransfersOf(env.sim, 'tu-op').map((t) => t.amountMicroUsd)).toEqual(['1000', '900']);
      const { rows } = await env.pool.query(
        `SELECT actor FROM audit_log WHERE external_ref = 'tu-op' AND action = 'transfer.resolved_by_operator'`,
      );
      expect(rows).toEqual([{ actor: 'operator:bob' }]);
    },
  );

  it('refuses a closing or closed tenant before any platform call and writes nothing', async () => {
    await env.pool.query(`UPDATE tenants SET status = 'closed' WHERE external_ref = 'tu-closed'`);
    const before = env.sim.state().transfers.length;
    const handle = await topUp('tu-closed', 'late-1', '100');
    const error = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failureTypeOf(error)).toBe('TENANT_CLOSED');
    expect(env.sim.state().transfers.length).toBe(before);
    const { rows } = await env.pool.query(
      `SELECT count(*)::int AS n FROM transfer_intents WHERE external_ref = 'tu-closed' AND kind <> 'initial'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it(
    "waits visibly on the parent's INSUFFICIENT_BALANCE, raises the parent-wide " +
      'state, and continues on parentFunded',
    async () => {
      await fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paidMicroUsd: '10' }),
      });
      const handle = await topUp('tu-broke', 'broke-1', '5000', { options: FAST });
      const waiting = await waitForTopUpStage(env, handle.workflowId, 'waiting_for_parent_funds');
      expect(waiting.waitingFor).toMatch(/tenantctl parent-funded/);
      const { rows } = await env.pool.query(`SELECT insufficient_since IS NOT NULL AS set FROM funding_parent`);
      expect(rows).toEqual([{ set: true }]);
      await fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paidMicroUsd: '100000000' }),
      });
      await handle.executeUpdate('parentFunded', { args: [{ operator: 'carol', reason: 'wired funds' }] });
      expect((await handle.result()).state).toBe('succeeded');
      expect(platformTransfersOf(env.sim, 'tu-broke').map((t) => t.amountMicroUsd)).toEqual(['1000', '5000']);
    },
  );

  it('refuses bad input naming the field, before anything is started', async () => {
    for (const [field, value] of [
      ['amountMicroUsd', '0'],
      ['amountMicroUsd', '-1'],
      ['amountMicroUsd', '1.5'],
      ['amountMicroUsd', '1e6'],
      ['amountMicroUsd', 5],
      ['idempotencyKey', 'k'.repeat(256)],
      ['idempotencyKey', 'has:colon'],
      ['idempotencyKey', undefined],
    ] as const) {
      const input = { externalRef: 'tu-a', idempotencyKey: 'ok-key', amountMicroUsd: '10', [field]: value };
      const error = await startTopUp(env.client, input, { taskQueue: env.taskQueue }).then(
        () => undefined,
        (e: unknown) => e as { problems?: string[] },
      );
      expect(error?.problems, `${field}=${String(value)}`).toEqual([expect.stringMatching(new RegExp(`^${field}: `))]);
    }
    expect(await workflowExists(env.client, 'fund:tu-a:ok-key')).toBe(false);
  });
});
