import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_PLATFORM_KEY,
  DEFAULT_SEED,
  startSimulator,
  type RunningSimulator,
  type SimulatorOptions,
} from '../../src/sim/index.js';
import { adminCall, apiCall, createTenant, createTenantKey } from '../harness/sim-calls.js';

describe('simulator API keys: secrets, caps, revocation and last use', () => {
  let sim: RunningSimulator;
  const start = async (options: SimulatorOptions = {}) => {
    sim = await startSimulator(options);
  };
  afterEach(async () => {
    await sim.close();
  });

  it('returns the tenant key token only in the create response', async () => {
    await start();
    const id = await createTenant(sim);
    const created = await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/create`, { body: { name: 'prod' } });
    expect(created.status).toBe(201);
    const token = created.body.data.token as string;
    expect(token).toMatch(/^svsk_[0-9A-Za-z]{32,}$/);
    expect(created.body.data).toMatchObject({ name: 'prod', status: 'active' });
    const list = await apiCall(sim, 'GET', `/subaccounts/${id}/api-keys`);
    expect(list.body.data.items).toHaveLength(1);
    expect(list.text).not.toContain(token);
    expect(list.body.data.items[0].token).toBeUndefined();
    expect(JSON.stringify(sim.state())).not.toContain(token);
    expect((await adminCall(sim, 'GET', '/__sim/state')).text).not.toContain(token);
  });

  it('caps active tenant keys with 409 API_KEY_LIMIT_REACHED and frees a slot on revoke', async () => {
    await start({ seed: { ...DEFAULT_SEED, tenantActiveKeyLimit: 3 } });
    const id = await createTenant(sim);
    const keys = [await createTenantKey(sim, id), await createTenantKey(sim, id), await createTenantKey(sim, id)];
    const fourth = await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/create`, { body: { name: 'four' } });
    expect([fourth.status, fourth.body.error.code]).toEqual([409, 'API_KEY_LIMIT_REACHED']);
    await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/${keys[0]?.id}/revoke`);
    const retry = await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/create`, { body: { name: 'four' } });
    expect(retry.status).toBe(201);
  });

  it('counts the cap per tenant, not across tenants', async () => {
    await start({ seed: { ...DEFAULT_SEED, tenantActiveKeyLimit: 1 } });
    const a = await createTenant(sim);
    const b = await createTenant(sim);
    await createTenantKey(sim, a);
    expect((await apiCall(sim, 'POST', `/subaccounts/${b}/api-keys/create`, { body: { name: 'x' } })).status).toBe(201);
  });

  it('caps active platform keys at the parent limit, counting the seeded key', async () => {
    await start({ seed: { ...DEFAULT_SEED, parents: [{ ...DEFAULT_SEED.parents[0]!, activeKeyLimit: 2 }] } });
    const second = await apiCall(sim, 'POST', '/platform/api-keys/create', { body: { name: 'ci' } });
    expect(second.status).toBe(201);
    expect(second.body.data.token).toMatch(/^svpk_[0-9A-Za-z]{32,}$/);
    const third = await apiCall(sim, 'POST', '/platform/api-keys/create', { body: { name: 'ci2' } });
    expect([third.status, third.body.error.code]).toEqual([409, 'API_KEY_LIMIT_REACHED']);
    const list = await apiCall(sim, 'GET', '/platform/api-keys');
    expect(list.body.data.items).toHaveLength(2);
    expect(list.text).not.toContain(second.body.data.token);
    await apiCall(sim, 'POST', `/platform/api-keys/${second.body.data.id}/revoke`);
    expect((await apiCall(sim, 'POST', '/platform/api-keys/create', { body: { name: 'ci3' } })).status).toBe(201);
  });

  it('treats a second revoke as a successful no-op that keeps the first revocation time', async () => {
    await start();
    const id = await createTenant(sim);
    const key = await createTenantKey(sim, id);
    const first = await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/${key.id}/revoke`);
    await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: 60 });
    const second = await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/${key.id}/revoke`);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.data.status).toBe('revoked');
    expect(second.body.data.revokedAt).toBe(first.body.data.revokedAt);
  });

  it("answers revoking an unknown key or another tenant's key with 404 API_KEY_NOT_FOUND", async () => {
    await start();
    const a = await createTenant(sim);
    const b = await createTenant(sim);
    const keyOfB = await createTenantKey(sim, b);
    for (const path of [
      `/subaccounts/${a}/api-keys/key_nope/revoke`,
      `/subaccounts/${a}/api-keys/${keyOfB.id}/revoke`,
      `/platform/api-keys/${keyOfB.id}/revoke`,
    ]) {
      const res = await apiCall(sim, 'POST', path);
      expect([res.status, res.body.error.code], path).toEqual([404, 'API_KEY_NOT_FOUND']);
    }
    expect(sim.state().apiKeys.find((k) => k.id === keyOfB.id)?.status).toBe('active');
  });

  it('records the last use of a key on every authenticated request (sim clock) and shows it in lists', async () => {
    await start();
    const id = await createTenant(sim);
    const key = await createTenantKey(sim, id);
    const listed = async () =>
      (await apiCall(sim, 'GET', `/subaccounts/${id}/api-keys`)).body.data.items.find(
        (k: { id: string }) => k.id === key.id,
      );
    expect((await listed()).lastUsedAt).toBeNull();

    await apiCall(sim, 'GET', '/projects', { token: key.token });
    const firstUse = Date.parse((await listed()).lastUsedAt as string);
    expect(Math.abs(firstUse - Date.now())).toBeLessThan(5_000);

    await adminCall(sim, 'POST', '/__sim/clock/advance', { seconds: 7200 });
    expect(Date.parse((await listed()).lastUsedAt as string)).toBe(firstUse);
    // Even a refused call is an authenticated use.
    await apiCall(sim, 'GET', '/projects', { token: key.token, subaccount: 'sub_other' });
    const secondUse = Date.parse((await listed()).lastUsedAt as string);
    expect(secondUse - firstUse).toBeGreaterThanOrEqual(7_200_000);
    expect(sim.state().apiKeys.find((k) => k.id === key.id)?.lastUsedAt).toBe(new Date(secondUse).toISOString());

    const platform = (await apiCall(sim, 'GET', '/platform/api-keys')).body.data.items[0];
    expect(Date.parse(platform.lastUsedAt)).toBeGreaterThan(firstUse);
    expect(DEFAULT_PLATFORM_KEY).not.toBe(platform.id);
  });

  it('omits lastUsedAt and renames the id field when configured so', async () => {
    await start({ choices: { showLastUsed: false, keyIdField: 'keyId' } });
    const id = await createTenant(sim);
    const created = await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/create`, { body: { name: 'x' } });
    expect(created.body.data.keyId).toMatch(/^key_/);
    expect(created.body.data.id).toBeUndefined();
    const item = (await apiCall(sim, 'GET', `/subaccounts/${id}/api-keys`)).body.data.items[0];
    expect(item).not.toHaveProperty('lastUsedAt');
    expect((await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/${created.body.data.keyId}/revoke`)).status).toBe(
      200,
    );
  });
});
