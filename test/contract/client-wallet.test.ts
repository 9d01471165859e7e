import { describe, expect, it } from 'vitest';
import { type PlatformError, PlatformIdempotencyConflictError, PlatformInputError } from '../../src/platform/index.js';
import { DEFAULT_PAID_BALANCE_MICRO_USD, type RunningSimulator } from '../../src/sim/index.js';
import { failure } from '../harness/failures.js';
import { simulatorWithSubaccount } from '../harness/sim-subaccount.js';

const setup = simulatorWithSubaccount();

async function advanceClock(running: RunningSimulator, seconds: number): Promise<void> {
  const res = await fetch(`${running.url}/__sim/clock/advance`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ seconds }),
  });
  expect(res.status).toBe(200);
}

const parentPaid = (running: RunningSimulator) => running.state().parents[0]?.paidBalanceMicroUsd;

describe('client against the simulator: transfers', () => {
  it('transfers paid balance and reads it back from the wallet', async () => {
    const { client, subaccountId, running } = await setup();
    const result = await client.transfer({ subaccountId, amountMicroUsd: '2500000', idempotencyKey: 'fund:acme:1' });
    expect(result.requestId).toMatch(/^req_/);
    expect(result.transfer).toMatchObject({ amountMicroUsd: '2500000', idempotencyKey: 'fund:acme:1', subaccountId });
    const { wallet } = await client.getWallet({ subaccountId });
    expect(wallet).toMatchObject({ balanceMicroUsd: '2500000', balanceKnown: true });
    expect(wallet.transfers?.map((t) => t.idempotencyKey)).toEqual(['fund:acme:1']);
    expect(parentPaid(running)).toBe((BigInt(DEFAULT_PAID_BALANCE_MICRO_USD) - 2_500_000n).toString());
  });

  it('never transfers promotional balance: only the paid balance must cover the amount', async () => {
    const { client, subaccountId } = await setup();
    const tooMuch = (BigInt(DEFAULT_PAID_BALANCE_MICRO_USD) + 1n).toString();
    const err = await failure(client.transfer({ subaccountId, amountMicroUsd: tooMuch, idempotencyKey: 'fund:big' }));
    expect(err.code).toBe('INSUFFICIENT_BALANCE');
    await client.transfer({ subaccountId, amountMicroUsd: DEFAULT_PAID_BALANCE_MICRO_USD, idempotencyKey: 'fund:all' });
  });

  it('refuses malformed amounts locally, before anything is sent', async () => {
    const { client, subaccountId, running } = await setup();
    for (const amount of ['0', '-3', '1.5', '1e6']) {
      const err = await failure(client.transfer({ subaccountId, amountMicroUsd: amount, idempotencyKey: 'fund:bad' }));
      expect(err).toBeInstanceOf(PlatformInputError);
    }
    expect(running.state().transfers).toHaveLength(0);
  });

  it('replays the original answer for a retry under the same key and debits once', async () => {
    const { client, subaccountId, running } = await setup({ replay: 'original' });
    const input = { subaccountId, amountMicroUsd: '1000', idempotencyKey: 'fund:acme:retry' };
    const first = await client.transfer(input);
    const again = await client.transfer(input);
    expect(again.transfer.id).toBe(first.transfer.id);
    expect(running.state().transfers).toHaveLength(1);
  });

  it('debits once for 50 parallel retries of one transfer under one key', async () => {
    const { client, subaccountId, running } = await setup();
    const input = { subaccountId, amountMicroUsd: '7', idempotencyKey: 'fund:parallel' };
    const results = await Promise.all(Array.from({ length: 50 }, () => client.transfer(input)));
    expect(new Set(results.map((r) => r.transfer.id)).size).toBe(1);
    expect(running.state().transfers).toHaveLength(1);
  });

  it(
    'surfaces a conflict-style replay as IDEMPOTENCY_CONFLICT so the caller ' + 'reconciles by reading the wallet',
    async () => {
      const { client, subaccountId, running } = await setup({ replay: 'conflict' });
      const input = { subaccountId, amountMicroUsd: '1000', idempotencyKey: 'fund:acme:conflict' };
      await client.transfer(input);
      const err = await failure(client.transfer(input));
      expect(err).toBeInstanceOf(PlatformIdempotencyConflictError);
      expect(err).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', classification: 'business-state', retryable: false });
      const { wallet } = await client.getWallet({ subaccountId });
      expect(wallet.transfers?.some((t) => t.idempotencyKey === input.idempotencyKey)).toBe(true);
      expect(running.state().transfers).toHaveLength(1);
    },
  );

  it('rejects a different transfer under a used key as IDEMPOTENCY_CONFLICT', async () => {
    const { client, subaccountId } = await setup();
    await client.transfer({ subaccountId, amountMicroUsd: '1000', idempotencyKey: 'fund:reused' });
    const err = await failure(client.transfer({ subaccountId, amountMicroUsd: '2000', idempotencyKey: 'fund:reused' }));
    expect(err.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('treats the key as new once the platform has forgotten it (retention expiry)', async () => {
    const { client, subaccountId, running } = await setup();
    const input = { subaccountId, amountMicroUsd: '1000', idempotencyKey: 'fund:expiring' };
    await client.transfer(input);
    await advanceClock(running, 86_400 + 1);
    await client.transfer(input);
    expect(running.state().transfers).toHaveLength(2);
  });

  it('never overdraws under 50 parallel different transfers', async () => {
    const { client, subaccountId, running } = await setup();
    const share = (BigInt(DEFAULT_PAID_BALANCE_MICRO_USD) / 40n).toString();
    const settled = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        client.transfer({ subaccountId, amountMicroUsd: share, idempotencyKey: `fund:p${i}` }),
      ),
    );
    const refused = settled
      .filter((s) => s.status === 'rejected')
      .map((s) => (s as PromiseRejectedResult).reason as PlatformError);
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(40);
    expect(refused.every((e) => e.code === 'INSUFFICIENT_BALANCE')).toBe(true);
    expect(parentPaid(running)).toBe('0');
  });
});
