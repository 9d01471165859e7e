import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEED, startSimulator, type RunningSimulator, type SimSeedInput } from '../../src/sim/index.js';
import {
  apiCall,
  createProject,
  createTenant,
  createTenantKey,
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
} from '../harness/sim-calls.js';

const OTHER_PLATFORM_KEY = 'svpk_sim_DO_NOT_USE_parent_0002';
const TWO_PARENTS: SimSeedInput = {
  ...DEFAULT_SEED,
  parents: [
    ...DEFAULT_SEED.parents,
    {
      id: 'parent_sim_0002',
      paidBalanceMicroUsd: '1000',
      promoBalanceMicroUsd: '0',
      platformKeys: [OTHER_PLATFORM_KEY],
      personalTokens: ['sv_sim_DO_NOT_USE_personal_0002'],
      activeKeyLimit: 2,
    },
  ],
};

describe('simulator authentication and tenant context', () => {
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSimulator({ seed: TWO_PARENTS });
  });
  afterEach(async () => {
    await sim.close();
  });

  it('answers a missing, malformed or unknown bearer token with 401 UNAUTHORIZED', async () => {
    const variants: Record<string, string>[] = [
      {},
      { Authorization: 'Basic dXNlcjpwdw==' },
      { Authorization: 'Bearer' },
    ];
    for (const headers of variants) {
      const res = await apiCall(sim, 'GET', '/subaccounts', { token: null, headers });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    }
    const unknown = await apiCall(sim, 'GET', '/subaccounts', { token: 'svpk_sim_DO_NOT_USE_unknown_9999' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('UNAUTHORIZED');
  });

  it("lets platform keys and the parent's personal tokens make control-plane calls", async () => {
    await createTenant(sim);
    const byKey = await apiCall(sim, 'GET', '/subaccounts');
    const byPerson = await apiCall(sim, 'GET', '/subaccounts', { token: DEFAULT_PERSONAL_TOKEN });
    expect(byKey.status).toBe(200);
    expect(byPerson.status).toBe(200);
    expect(byPerson.body.data.items).toHaveLength(1);
  });

  it('refuses tenant keys on control-plane calls with 403 CREDENTIAL_NOT_ALLOWED', async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    for (const [method, path] of [
      ['GET', '/subaccounts'],
      ['GET', `/subaccounts/${id}/wallet`],
      ['POST', `/subaccounts/${id}/api-keys/create`],
      ['GET', '/platform/api-keys'],
    ] as const) {
      const res = await apiCall(sim, method, path, { token, body: method === 'POST' ? { name: 'x' } : undefined });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe('CREDENTIAL_NOT_ALLOWED');
    }
  });

  it('gives a tenant key its own tenant context with no header', async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    const projectId = await createProject(sim, { token });
    expect(sim.state().projects.find((p) => p.id === projectId)?.subaccountId).toBe(id);
    const same = await apiCall(sim, 'GET', '/projects', { token, subaccount: id });
    expect(same.status).toBe(200);
    expect(same.body.data.items.map((p: { id: string }) => p.id)).toEqual([projectId]);
  });

  it('answers a tenant key carrying another tenant in X-Service-Subaccount with 403 SUBACCOUNT_SCOPE', async () => {
    const mine = await createTenant(sim);
    const other = await createTenant(sim);
    const { token } = await createTenantKey(sim, mine);
    const res = await apiCall(sim, 'GET', '/projects', { token, subaccount: other });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('SUBACCOUNT_SCOPE');
  });

  it("lets a platform key reach an owned tenant's resources with X-Service-Subaccount", async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    const projectId = await createProject(sim, { token });
    const viaParent = await apiCall(sim, 'GET', '/projects', { subaccount: id });
    expect(viaParent.body.data.items.map((p: { id: string }) => p.id)).toEqual([projectId]);
    const parentOwn = await apiCall(sim, 'GET', '/projects');
    expect(parentOwn.body.data.items).toEqual([]);
  });

  it('answers a platform key targeting a foreign, absent or closed tenant with 403 SUBACCOUNT_SCOPE', async () => {
    const foreign = await createTenant(sim, { token: OTHER_PLATFORM_KEY });
    const closed = await createTenant(sim);
    expect((await apiCall(sim, 'POST', `/subaccounts/${closed}/close`)).status).toBe(200);
    for (const target of [foreign, 'sub_doesNotExist123', closed]) {
      const res = await apiCall(sim, 'GET', '/projects', { subaccount: target });
      expect(res.status, target).toBe(403);
      expect(res.body.error.code).toBe('SUBACCOUNT_SCOPE');
      const human = await apiCall(sim, 'GET', '/projects', { token: DEFAULT_PERSONAL_TOKEN, subaccount: target });
      expect(human.body.error.code).toBe('SUBACCOUNT_SCOPE');
    }
  });

  it("answers calls under a suspended tenant's context with 403 SUBACCOUNT_SUSPENDED until resumed", async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    expect((await apiCall(sim, 'POST', `/subaccounts/${id}/suspend`)).status).toBe(200);
    const byTenant = await apiCall(sim, 'GET', '/projects', { token });
    const byParent = await apiCall(sim, 'POST', '/projects/create', {
      subaccount: id,
      body: { name: 'a', region: 'eu' },
    });
    expect([byTenant.status, byTenant.body.error.code]).toEqual([403, 'SUBACCOUNT_SUSPENDED']);
    expect([byParent.status, byParent.body.error.code]).toEqual([403, 'SUBACCOUNT_SUSPENDED']);
    expect(sim.state().projects).toEqual([]);
    // The control plane still answers for a suspended tenant: that is how it gets resumed.
    expect((await apiCall(sim, 'GET', `/subaccounts/${id}`)).body.data.status).toBe('suspended');
    expect((await apiCall(sim, 'POST', `/subaccounts/${id}/resume`)).body.data.status).toBe('active');
    expect((await apiCall(sim, 'GET', '/projects', { token })).status).toBe(200);
  });

  it('answers closed, absent and foreign tenants on control-plane paths with the same 404', async () => {
    const foreign = await createTenant(sim, { token: OTHER_PLATFORM_KEY });
    const closed = await createTenant(sim);
    await apiCall(sim, 'POST', `/subaccounts/${closed}/close`);
    const answers = new Set<string>();
    for (const target of [foreign, 'sub_absent0000000000', closed]) {
      for (const [method, path, body] of [
        ['GET', `/subaccounts/${target}`, undefined],
        ['GET', `/subaccounts/${target}/wallet`, undefined],
        ['GET', `/subaccounts/${target}/api-keys`, undefined],
        ['POST', `/subaccounts/${target}/api-keys/create`, { name: 'k' }],
        ['POST', `/subaccounts/${target}/suspend`, undefined],
        ['POST', `/subaccounts/${target}/close`, undefined],
        ['POST', `/subaccounts/${target}/wallet/transfers`, { amountMicroUsd: '1', idempotencyKey: `t-${target}` }],
      ] as const) {
        const res = await apiCall(sim, method, path, { body, idempotencyKey: `t-${target}` });
        expect(res.status, `${method} ${path}`).toBe(404);
        answers.add(JSON.stringify(res.body.error));
      }
    }
    expect([...answers]).toEqual([JSON.stringify({ code: 'SUBACCOUNT_NOT_FOUND', message: 'Sub-account not found.' })]);
    expect((await apiCall(sim, 'GET', '/subaccounts')).body.data.items.map((t: { id: string }) => t.id)).not.toContain(
      closed,
    );
  });

  it('denies revoked tenant and platform keys with 401', async () => {
    const id = await createTenant(sim);
    const key = await createTenantKey(sim, id);
    await apiCall(sim, 'POST', `/subaccounts/${id}/api-keys/${key.id}/revoke`);
    expect((await apiCall(sim, 'GET', '/projects', { token: key.token })).status).toBe(401);

    const created = await apiCall(sim, 'POST', '/platform/api-keys/create', { body: { name: 'ci' } });
    const platformToken = created.body.data.token as string;
    expect((await apiCall(sim, 'GET', '/subaccounts', { token: platformToken })).status).toBe(200);
    await apiCall(sim, 'POST', `/platform/api-keys/${created.body.data.id}/revoke`);
    const denied = await apiCall(sim, 'GET', '/subaccounts', { token: platformToken });
    expect([denied.status, denied.body.error.code]).toEqual([401, 'UNAUTHORIZED']);
  });

  it('denies the keys of a closed tenant with 401', async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    await apiCall(sim, 'POST', `/subaccounts/${id}/close`);
    expect((await apiCall(sim, 'GET', '/projects', { token })).status).toBe(401);
  });

  it('denies machine credentials on personal and billing endpoints (rule 4) but not personal tokens', async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    for (const path of ['/auth/profile', '/auth/sessions', '/billing/payment-methods', '/billing/subscription']) {
      for (const machine of [token, DEFAULT_PLATFORM_KEY]) {
        const res = await apiCall(sim, 'GET', path, { token: machine });
        expect([res.status, res.body.error.code], path).toEqual([403, 'CREDENTIAL_NOT_ALLOWED']);
      }
      expect((await apiCall(sim, 'GET', path, { token: DEFAULT_PERSONAL_TOKEN })).status).toBe(200);
    }
  });

  it('requires a personal token for registry webhook management (rule 6)', async () => {
    const id = await createTenant(sim);
    const { token } = await createTenantKey(sim, id);
    const projectId = await createProject(sim, { token });
    const body = { label: 'ci', url: 'https://example.test/hook', events: ['*'] };
    for (const machine of [{ token }, { token: DEFAULT_PLATFORM_KEY, subaccount: id }]) {
      const res = await apiCall(sim, 'POST', `/projects/${projectId}/registry/webhooks/create`, { ...machine, body });
      expect([res.status, res.body.error.code]).toEqual([403, 'CREDENTIAL_NOT_ALLOWED']);
    }
    const human = await apiCall(sim, 'POST', `/projects/${projectId}/registry/webhooks/create`, {
      token: DEFAULT_PERSONAL_TOKEN,
      subaccount: id,
      body,
    });
    expect(human.status, human.text).toBe(201);
  });
});
