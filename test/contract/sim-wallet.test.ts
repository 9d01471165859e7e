import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEED, startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/sim/index.js';
import { adminCall, apiCall, createTenant, uniqueKey } from '../harness/sim-calls.js';

const PAID = BigInt(DEFAULT_SEED.parents[0]?.paidBalanceMicroUsd ?? '0');
const PROMO = BigInt(DEFAULT_SEED.parents[0]?.promoBalanceMicroUsd ?? '0');

describe('simulator wallet transfers and idempotency', () => {
  let sim: RunningSimulator;
  const start = async (options: SimulatorOptions = {}) => {
    sim = await startSimulator(options);
    return sim;
  };
  afterEach(async () => {
    await sim.close();
  });

  const transfer = (tenant: string, amount: unknown, key: string, bodyKey: unknown = key) =>
    apiCall(sim, 'POST', `/subaccounts/${tenant}/wallet/transfers`, {
      idempotencyKey: key,
      body: { amountMicroUsd: amount, idempotencyKey: bodyKey },
    });
  const balances = () => ({
    paid: BigInt(sim.state().parents[0]?.paidBalanceMicroUsd ?? '-1'),
    promo: BigInt(sim.state().parents[0]?.promoBalanceMicroUsd ?? '-1'),
    tenants: sim.state().subaccounts.map((s) => s.balanceMicroUsd),
  });

  it('moves paid balance into the tenant wallet and shows the transfer with its key', async () => {
    await start();
    const id = await createTenant(sim);
    const res = await transfer(id, '2500000', 'fund-1');
    expect(res.status, res.text).toBe(201);
    expect(res.body.data).toMatchObject({ amountMicroUsd: '2500000', idempotencyKey: 'fund-1', subaccountId: id });
    expect(res.body.data.id).toMatch(/^txn_/);
    expect(balances()).toEqual({ paid: PAID - 2_500_000n, promo: PROMO, tenants: ['2500000'] });
    const wallet = await apiCall(sim, 'GET', `/subaccounts/${id}/wallet`);
    expect(wallet.body.data.balanceMicroUsd).toBe('2500000');
    expect(wallet.body.data.recentTransfers).toEqual([
      expect.objectContaining({ id: res.body.data.id, idempotencyKey: 'fund-1' }),
    ]);
  });

  it.each([['1.5'], ['-3'], ['0'], ['1e6'], ['01'], [' 5'], [''], ['0x10'], [5], [1.5], [null], [true]])(
    'rejects amountMicroUsd %j with 400 VALIDATION_ERROR and moves nothing',
    async (amount) => {
      await start();
      const id = await createTenant(sim);
      const res = await transfer(id, amount, uniqueKey('bad'));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toContain('amountMicroUsd');
      expect(balances()).toEqual({ paid: PAID, promo: PROMO, tenants: ['0'] });
    },
  );

  it('requires the idempotency key in both header and body, and refuses them differing', async () => {
    await start();
    const id = await createTenant(sim);
    const path = `/subaccounts/${id}/wallet/transfers`;
    const noHeader = await apiCall(sim, 'POST', path, { body: { amountMicroUsd: '1', idempotencyKey: 'a' } });
    const blankHeader = await apiCall(sim, 'POST', path, {
      idempotencyKey: '  ',
      body: { amountMicroUsd: '1', idempotencyKey: 'a' },
    });
    const noBodyKey = await apiCall(sim, 'POST', path, { idempotencyKey: 'a', body: { amountMicroUsd: '1' } });
    for (const res of [noHeader, blankHeader, noBodyKey]) {
      expect([res.status, res.body.error.code]).toEqual([400, 'IDEMPOTENCY_KEY_REQUIRED']);
    }
    const differ = await transfer(id, '1', 'header-key', 'body-key');
    expect([differ.status, differ.body.error.code]).toEqual([400, 'IDEMPOTENCY_KEY_MISMATCH']);
    expect(sim.state().transfers).toEqual([]);
  });

  it(
    'refuses a transfer the paid balance cannot cover, even when promo would, with ' + '409 INSUFFICIENT_BALANCE',
    async () => {
      await start();
      const id = await createTenant(sim);
      const res = await transfer(id, (PAID + 1n).toString(), 'too-much');
      expect([res.status, res.body.error.code]).toEqual([409, 'INSUFFICIENT_BALANCE']);
      expect(balances()).toEqual({ paid: PAID, promo: PROMO, tenants: ['0'] });
      // A refusal is not recorded: the same key may carry the transfer once it fits.
      const retry = await transfer(id, '10', 'too-much');
      expect(retry.status).toBe(201);
    },
  );

  it('replays the original response for a retry with the same key and debits once', async () => {
    await start();
    const id = await createTenant(sim);
    const first = await transfer(id, '700', 'once');
    const again = await transfer(id, '700', 'once');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(again.body.meta.requestId).not.toBe(first.body.meta.requestId);
    expect(balances().paid).toBe(PAID - 700n);
    expect(sim.state().transfers).toHaveLength(1);
  });

  it('rejects a different request under a used key with 409 IDEMPOTENCY_KEY_REUSED', async () => {
    await start();
    const a = await createTenant(sim);
    const b = await createTenant(sim);
    await transfer(a, '700', 'k1');
    const otherAmount = await transfer(a, '701', 'k1');
    const otherTenant = await transfer(b, '700', 'k1');
    for (const res of [otherAmount, otherTenant]) {
      expect([res.status, res.body.error.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    }
    expect(balances().paid).toBe(PAID - 700n);
  });

  it('forgets a key after the retention period so a retry then debits again', async () => {
    await start({ seed: { ...DEFAULT_SEED, idempotencyRetentionSeconds: 3600 } });
    const id = await createTenant(sim);
    const first = await transfer(id, '100', 'late');
    await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: 3590 });
    const within = await transfer(id, '100', 'late');
    expect(within.body.data.id).toBe(first.body.data.id);
    await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: 20 });
    const after = await transfer(id, '100', 'late');
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.body.data.id).not.toBe(first.body.data.id);
    expect(balances().paid).toBe(PAID - 200n);
  });

  it('answers a replay with 409 IDEMPOTENCY_KEY_IN_USE when configured for conflict replay', async () => {
    await start({ choices: { replay: 'conflict' } });
    const id = await createTenant(sim);
    await transfer(id, '5', 'c1');
    const again = await transfer(id, '5', 'c1');
    expect([again.status, again.body.error.code]).toEqual([409, 'IDEMPOTENCY_KEY_IN_USE']);
    expect(sim.state().transfers).toHaveLength(1);
  });

  it('makes tenant creation idempotent on its required Idempotency-Key', async () => {
    await start();
    const body = { name: 'Acme', externalRef: 'cust-9' };
    const missing = await apiCall(sim, 'POST', '/subaccounts/create', { body });
    expect([missing.status, missing.body.error.code]).toEqual([400, 'IDEMPOTENCY_KEY_REQUIRED']);
    const first = await apiCall(sim, 'POST', '/subaccounts/create', { idempotencyKey: 'onboard:cust-9', body });
    const again = await apiCall(sim, 'POST', '/subaccounts/create', { idempotencyKey: 'onboard:cust-9', body });
    expect(again.body.data.id).toBe(first.body.data.id);
    const changed = await apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: 'onboard:cust-9',
      body: { ...body, name: 'Other' },
    });
    expect(changed.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(sim.state().subaccounts).toHaveLength(1);
  });

  it('replays a keyed close after the tenant is gone instead of answering 404', async () => {
    await start();
    const id = await createTenant(sim);
    const first = await apiCall(sim, 'POST', `/subaccounts/${id}/close`, { idempotencyKey: `close:${id}` });
    const again = await apiCall(sim, 'POST', `/subaccounts/${id}/close`, { idempotencyKey: `close:${id}` });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('closed');
    const unkeyed = await apiCall(sim, 'POST', `/subaccounts/${id}/close`);
    expect(unkeyed.status).toBe(404);
  });

  it('debits once for 50 parallel retries of one transfer under one key', async () => {
    await start();
    const id = await createTenant(sim);
    // A random delay lets the retries interleave inside the server.
    await adminCall(sim, 'POST', '/__sim/faults', {
      rules: [
        { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'delay', delayMs: 30, probability: 0.5 },
      ],
    });
    const results = await Promise.all(Array.from({ length: 50 }, () => transfer(id, '1000', 'parallel-1')));
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    expect(sim.state().transfers).toHaveLength(1);
    expect(balances()).toEqual({ paid: PAID - 1000n, promo: PROMO, tenants: ['1000'] });
  });

  it('never overdraws under 50 parallel different transfers', async () => {
    await start({
      seed: { ...DEFAULT_SEED, parents: [{ ...DEFAULT_SEED.parents[0]!, paidBalanceMicroUsd: '20000' }] },
    });
    const id = await createTenant(sim);
    await adminCall(sim, 'POST', '/__sim/faults', {
      rules: [
        { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'delay', delayMs: 20, probability: 0.5 },
      ],
    });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => transfer(id, '1000', `p-${i}`)));
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409);
    expect(ok).toHaveLength(20);
    expect(refused.every((r) => r.body.error.code === 'INSUFFICIENT_BALANCE')).toBe(true);
    expect(refused).toHaveLength(30);
    expect(balances()).toEqual({ paid: 0n, promo: PROMO, tenants: ['20000'] });
  });
});
