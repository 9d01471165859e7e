import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buildSimulatorApp,
  DEFAULT_PARENT_ID,
  DEFAULT_SEED,
  startSimulator,
  type RunningSimulator,
} from '../../src/sim/index.js';
import { adminCall, apiCall, createTenant } from '../harness/sim-calls.js';

describe('simulator admin routes', () => {
  let sim: RunningSimulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('reports parents, tenants, transfers, keys, projects, webhooks and stats in GET /__sim/state', async () => {
    sim = await startSimulator();
    const id = await createTenant(sim, { name: 'Acme', externalRef: 'cust-1' });
    await apiCall(sim, 'POST', `/subaccounts/${id}/wallet/transfers`, {
      idempotencyKey: 't1',
      body: { amountMicroUsd: '5', idempotencyKey: 't1' },
    });
    const res = await adminCall(sim, 'GET', '/__sim/state');
    expect(res.status).toBe(200);
    expect(res.body.parents).toEqual([
      expect.objectContaining({
        id: DEFAULT_PARENT_ID,
        paidBalanceMicroUsd: '999999995',
        promoBalanceMicroUsd: '50000000',
      }),
    ]);
    expect(res.body.subaccounts).toEqual([
      expect.objectContaining({
        id,
        parentId: DEFAULT_PARENT_ID,
        name: 'Acme',
        externalRef: 'cust-1',
        status: 'active',
      }),
    ]);
    expect(res.body.transfers).toEqual([
      expect.objectContaining({
        subaccountId: id,
        amountMicroUsd: '5',
        idempotencyKey: 't1',
        createdAt: expect.any(String),
      }),
    ]);
    expect(res.body.apiKeys).toEqual([
      expect.objectContaining({
        parentId: DEFAULT_PARENT_ID,
        subaccountId: null,
        status: 'active',
        lastUsedAt: expect.any(String),
      }),
    ]);
    expect(res.body.projects).toEqual([]);
    expect(res.body.webhooks).toEqual([]);
    expect(res.body.stats.byRoute).toMatchObject({
      'POST /subaccounts/create': 1,
      'POST /subaccounts/:subaccountId/wallet/transfers': 1,
    });
    expect(res.body.stats.requestsTotal).toBe(2);
    expect({ ...res.body, now: undefined }).toEqual({ ...JSON.parse(JSON.stringify(sim.state())), now: undefined });
  });

  it('moves the sim clock with POST /__sim/clock/advance', async () => {
    sim = await startSimulator();
    const before = Date.parse(sim.state().now);
    const res = await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: 86_400 });
    expect(Date.parse(res.body.now) - before).toBeGreaterThanOrEqual(86_400_000);
    const id = await createTenant(sim);
    const created = await apiCall(sim, 'GET', `/subaccounts/${id}`);
    expect(Date.parse(created.body.data.createdAt) - Date.now()).toBeGreaterThan(86_000_000);
    expect((await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: -5 })).status).toBe(400);
  });

  it('returns to the seed with POST /__sim/reset', async () => {
    sim = await startSimulator();
    const id = await createTenant(sim);
    await apiCall(sim, 'POST', `/subaccounts/${id}/wallet/transfers`, {
      idempotencyKey: 'r',
      body: { amountMicroUsd: '7', idempotencyKey: 'r' },
    });
    await adminCall(sim, 'POST', '/__sim/faults', { rules: [{ path: '/projects', mode: 'error-before-commit' }] });
    await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: 999_999 });
    expect((await adminCall(sim, 'POST', '/__sim/reset')).status).toBe(200);
    const state = sim.state();
    expect(state.subaccounts).toEqual([]);
    expect(state.transfers).toEqual([]);
    expect(state.parents[0]?.paidBalanceMicroUsd).toBe(DEFAULT_SEED.parents[0]?.paidBalanceMicroUsd);
    expect(state.stats.requestsTotal).toBe(0);
    expect(Math.abs(Date.parse(state.now) - Date.now())).toBeLessThan(5_000);
    expect((await apiCall(sim, 'GET', '/projects')).status).toBe(200);
  });

  it('starts the traffic statistics again under a rate limit with POST /__sim/traffic, keeping the state', async () => {
    sim = await startSimulator();
    const id = await createTenant(sim, { name: 'Acme', externalRef: 'cust-1' });
    const limited = await adminCall(sim, 'POST', '/__sim/traffic', { rateLimitPerSecond: 2 });
    expect(limited.status).toBe(200);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await apiCall(sim, 'GET', `/subaccounts/${id}`)).status);
    expect(answers).toEqual([200, 200, 429]);
    const stats = (await adminCall(sim, 'GET', '/__sim/state')).body.stats;
    expect(stats).toMatchObject({ requestsTotal: 3, rateLimitedTotal: 1, peakRequestsPerSecond: 3 });
    expect((await adminCall(sim, 'GET', '/__sim/state')).body.subaccounts).toHaveLength(1);
    await adminCall(sim, 'POST', '/__sim/traffic', { rateLimitPerSecond: null });
    expect((await apiCall(sim, 'GET', `/subaccounts/${id}`)).status).toBe(200);
    expect((await adminCall(sim, 'POST', '/__sim/traffic', { rateLimitPerSecond: 0 })).status).toBe(400);
  });

  it("adds another service's active platform key with POST /__sim/parents/:id/platform-keys", async () => {
    sim = await startSimulator();
    const token = 'svpk_sim_DO_NOT_USE_billing_service_01';
    const added = await adminCall(sim, 'POST', `/__sim/parents/${DEFAULT_PARENT_ID}/platform-keys`, {
      name: 'billing-service',
      token,
    });
    expect(added.status).toBe(200);
    expect(added.body).toEqual({ id: expect.stringMatching(/^key_/), name: 'billing-service' });
    expect(added.text).not.toContain(token);
    // The parent's list shows it beside the seed key, and the other service calls with it as with any key.
    const listed = await apiCall(sim, 'GET', '/platform/api-keys');
    expect(listed.body.data.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: added.body.id, name: 'billing-service', status: 'active' }),
      ]),
    );
    expect(listed.body.data.items).toHaveLength(2);
    expect((await apiCall(sim, 'GET', '/subaccounts', { token })).status).toBe(200);
    // The same token twice, an unknown parent and a token that is not a platform key are refused.
    const again = await adminCall(sim, 'POST', `/__sim/parents/${DEFAULT_PARENT_ID}/platform-keys`, {
      name: 'twice',
      token,
    });
    expect(again.status).toBe(409);
    const nobody = await adminCall(sim, 'POST', '/__sim/parents/par_none/platform-keys', {
      name: 'x',
      token: `${token}x`,
    });
    expect(nobody.status).toBe(404);
    const bad = await adminCall(sim, 'POST', `/__sim/parents/${DEFAULT_PARENT_ID}/platform-keys`, {
      name: 'x',
      token: 'svsk_not_a_platform_key',
    });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/token/);
  });

  it('answers admin routes only on loopback: anyone else gets 404 ROUTE_NOT_FOUND', async () => {
    const { app } = buildSimulatorApp();
    try {
      const remote = await app.inject({ method: 'GET', url: '/__sim/state', remoteAddress: '10.1.2.3' });
      expect(remote.statusCode).toBe(404);
      expect(remote.json()).toMatchObject({ error: { code: 'ROUTE_NOT_FOUND' } });
      const reset = await app.inject({ method: 'POST', url: '/__sim/reset', remoteAddress: '192.168.0.9' });
      expect(reset.statusCode).toBe(404);
      const local = await app.inject({ method: 'GET', url: '/__sim/state', remoteAddress: '127.0.0.1' });
      expect(local.statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('runs from the command line with a seed file, prints its address and stops on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-cli-'));
    const seedPath = join(dir, 'seed.json');
    writeFileSync(
      seedPath,
      JSON.stringify({ ...DEFAULT_SEED, parents: [{ ...DEFAULT_SEED.parents[0], paidBalanceMicroUsd: '42' }] }),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main/sim.ts', '--port', '0', '--seed', seedPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (match?.[1]) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const state = (await (await fetch(`${url}/__sim/state`)).json()) as { parents: { paidBalanceMicroUsd: string }[] };
    expect(state.parents[0]?.paidBalanceMicroUsd).toBe('42');
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses a bad seed file on the command line, naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-cli-'));
    const seedPath = join(dir, 'seed.json');
    writeFileSync(
      seedPath,
      JSON.stringify({ ...DEFAULT_SEED, parents: [{ ...DEFAULT_SEED.parents[0], paidBalanceMicroUsd: 5 }] }),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main/sim.ts', '--seed', seedPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(err).toContain('parents[0].paidBalanceMicroUsd');
  });
});
