import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEED, startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/sim/index.js';
import { adminCall, apiCall, createTenant } from '../harness/sim-calls.js';

const PAID = BigInt(DEFAULT_SEED.parents[0]?.paidBalanceMicroUsd ?? '0');

describe('simulator fault injection and rate limits', () => {
  let sim: RunningSimulator;
  const start = async (options: SimulatorOptions = {}) => {
    sim = await startSimulator(options);
  };
  afterEach(async () => {
    await sim.close();
  });
  const faults = (rules: unknown[]) => adminCall(sim, 'POST', '/__sim/faults', { rules });
  const transfer = (tenant: string, amount: string, key: string) =>
    apiCall(sim, 'POST', `/subaccounts/${tenant}/wallet/transfers`, {
      idempotencyKey: key,
      body: { amountMicroUsd: amount, idempotencyKey: key },
    });
  const paid = () => BigInt(sim.state().parents[0]?.paidBalanceMicroUsd ?? '-1');

  it('error-before-commit answers the status and code in the envelope and changes nothing', async () => {
    await start();
    const id = await createTenant(sim);
    await faults([
      {
        method: 'POST',
        path: '/subaccounts/*/wallet/transfers',
        mode: 'error-before-commit',
        status: 502,
        code: 'BAD_GATEWAY',
        count: 1,
      },
    ]);
    const failed = await transfer(id, '100', 'ebc');
    expect([failed.status, failed.body.error.code]).toEqual([502, 'BAD_GATEWAY']);
    expect(failed.body.meta.requestId).toMatch(/^req_/);
    expect(sim.state().transfers).toEqual([]);
    expect(paid()).toBe(PAID);
    const retry = await transfer(id, '100', 'ebc');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('drop-after-commit commits the transfer, then destroys the connection without a response', async () => {
    await start();
    const id = await createTenant(sim);
    await faults([{ method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 }]);
    await expect(transfer(id, '100', 'dac')).rejects.toThrow();
    expect(sim.state().transfers).toHaveLength(1);
    expect(paid()).toBe(PAID - 100n);
    // The ambiguous case resolved the right way: the same key replays, nothing is debited twice.
    const retry = await transfer(id, '100', 'dac');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.data.id).toBe(sim.state().transfers[0]?.id);
    expect(paid()).toBe(PAID - 100n);
  });

  it('drop-after-commit on tenant creation leaves the tenant created', async () => {
    await start();
    await faults([{ method: 'POST', path: '/subaccounts/create', mode: 'drop-after-commit' }]);
    const call = apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: 'c1',
      body: { name: 'a', externalRef: 'r' },
    });
    await expect(call).rejects.toThrow();
    expect(sim.state().subaccounts).toHaveLength(1);
  });

  it('delay holds the answer for at least delayMs', async () => {
    await start();
    await faults([{ method: 'GET', path: '/subaccounts', mode: 'delay', delayMs: 150 }]);
    const started = performance.now();
    const res = await apiCall(sim, 'GET', '/subaccounts');
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('rate-limit answers 429 RATE_LIMITED with Retry-After in seconds', async () => {
    await start();
    await faults([{ method: '*', path: '/subaccounts', mode: 'rate-limit', retryAfterSeconds: 3, count: 2 }]);
    const limited = await apiCall(sim, 'GET', '/subaccounts');
    expect([limited.status, limited.body.error.code]).toEqual([429, 'RATE_LIMITED']);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect((await apiCall(sim, 'GET', '/subaccounts')).status).toBe(429);
    expect((await apiCall(sim, 'GET', '/subaccounts')).status).toBe(200);
  });

  it('matches * to exactly one path segment and honours the method', async () => {
    await start();
    const id = await createTenant(sim);
    await faults([{ method: 'GET', path: '/subaccounts/*', mode: 'error-before-commit', status: 500, code: 'BOOM' }]);
    expect((await apiCall(sim, 'GET', `/subaccounts/${id}`)).status).toBe(500);
    expect((await apiCall(sim, 'GET', `/subaccounts/${id}/wallet`)).status).toBe(200);
    expect((await apiCall(sim, 'GET', '/subaccounts')).status).toBe(200);
    expect((await apiCall(sim, 'POST', `/subaccounts/${id}/suspend`)).status).toBe(200);
  });

  it('never applies a rule with probability 0, always one with probability 1', async () => {
    await start();
    await faults([
      { path: '/projects', mode: 'error-before-commit', status: 500, code: 'NEVER', probability: 0 },
      { path: '/subaccounts', mode: 'error-before-commit', status: 503, code: 'ALWAYS', probability: 1 },
    ]);
    for (let i = 0; i < 20; i += 1) expect((await apiCall(sim, 'GET', '/projects')).status).toBe(200);
    for (let i = 0; i < 5; i += 1) expect((await apiCall(sim, 'GET', '/subaccounts')).body.error.code).toBe('ALWAYS');
  });

  it('applies a seeded probability reproducibly', async () => {
    const pattern = async () => {
      await start({ choices: { faultRandomSeed: 42 } });
      await faults([
        { path: '/subaccounts', mode: 'error-before-commit', status: 503, code: 'FLAKY', probability: 0.5 },
      ]);
      const statuses: number[] = [];
      for (let i = 0; i < 20; i += 1) statuses.push((await apiCall(sim, 'GET', '/subaccounts')).status);
      await sim.close();
      return statuses;
    };
    const first = await pattern();
    const second = await pattern();
    expect(first).toEqual(second);
    expect(first).toContain(503);
    expect(first).toContain(200);
    await start();
  });

  it('clears all rules with DELETE /__sim/faults', async () => {
    await start();
    await faults([{ path: '/subaccounts', mode: 'error-before-commit', status: 500, code: 'X' }]);
    expect((await apiCall(sim, 'GET', '/subaccounts')).status).toBe(500);
    expect((await adminCall(sim, 'DELETE', '/__sim/faults')).status).toBe(200);
    expect((await apiCall(sim, 'GET', '/subaccounts')).status).toBe(200);
  });

  it('rejects an invalid fault rule with 400 VALIDATION_ERROR', async () => {
    await start();
    for (const rule of [
      { path: '/x', mode: 'explode' },
      { path: '/x', mode: 'delay', probability: 2 },
      { mode: 'delay' },
      { path: '/x', mode: 'delay', typo: 1 },
    ]) {
      const res = await faults([rule]);
      expect([res.status, res.body.error.code], JSON.stringify(rule)).toEqual([400, 'VALIDATION_ERROR']);
    }
  });

  it('enforces the global rate limit with 429 and Retry-After, and reports the peak rate', async () => {
    await start({ rateLimitPerSecond: 5 });
    const results = await Promise.all(Array.from({ length: 12 }, () => apiCall(sim, 'GET', '/subaccounts')));
    const limited = results.filter((r) => r.status === 429);
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(limited).toHaveLength(7);
    expect(
      limited.every((r) => r.body.error.code === 'RATE_LIMITED' && Number(r.headers.get('retry-after')) >= 1),
    ).toBe(true);
    const { stats } = sim.state();
    expect(stats.peakRequestsPerSecond).toBe(12);
    expect(stats.rateLimitedTotal).toBe(7);
    expect(stats.byRoute['GET /subaccounts']).toBe(12);
  });

  it('adds the configured latency to every API call but not to admin calls', async () => {
    await start({ latencyMs: 120 });
    let started = performance.now();
    await apiCall(sim, 'GET', '/subaccounts');
    expect(performance.now() - started).toBeGreaterThanOrEqual(110);
    started = performance.now();
    await adminCall(sim, 'GET', '/__sim/state');
    expect(performance.now() - started).toBeLessThan(110);
  });
});
