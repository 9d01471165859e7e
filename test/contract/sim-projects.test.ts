import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/sim/index.js';
import { apiCall, createProject, createTenant, createTenantKey } from '../harness/sim-calls.js';

describe('simulator projects, env vars and close', () => {
  let sim: RunningSimulator;
  const start = async (options: SimulatorOptions = {}) => {
    sim = await startSimulator(options);
  };
  afterEach(async () => {
    await sim.close();
  });
  const tenantWithKey = async () => {
    const id = await createTenant(sim);
    return { id, token: (await createTenantKey(sim, id)).token };
  };

  it('creates, reads, lists and deletes a project (POST or DELETE on /delete)', async () => {
    await start();
    const { token } = await tenantWithKey();
    const created = await apiCall(sim, 'POST', '/projects/create', {
      token,
      body: { name: 'web', region: 'eu-central' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'web', region: 'eu-central' });
    expect(created.body.data.id).toMatch(/^proj_/);
    const id = created.body.data.id as string;
    expect((await apiCall(sim, 'GET', `/projects/${id}`, { token })).body.data.id).toBe(id);
    expect((await apiCall(sim, 'POST', `/projects/${id}/delete`, { token })).status).toBe(200);
    const other = await createProject(sim, { token });
    expect((await apiCall(sim, 'DELETE', `/projects/${other}/delete`, { token })).status).toBe(200);
    expect((await apiCall(sim, 'GET', '/projects', { token })).body.data.items).toEqual([]);
    expect(sim.state().projects.map((p) => p.status)).toEqual(['deleted', 'deleted']);
  });

  it('answers a missing, deleted or other-tenant project with 404 project_not_found', async () => {
    await start();
    const a = await tenantWithKey();
    const b = await tenantWithKey();
    const ofB = await createProject(sim, b);
    const deleted = await createProject(sim, a);
    await apiCall(sim, 'POST', `/projects/${deleted}/delete`, a);
    for (const projectId of ['proj_missing000000', ofB, deleted]) {
      const res = await apiCall(sim, 'GET', `/projects/${projectId}`, a);
      expect([res.status, res.body.error.code]).toEqual([404, 'project_not_found']);
      expect(res.body.error.message).toEqual(expect.any(String));
    }
    const deleteOther = await apiCall(sim, 'DELETE', `/projects/${ofB}/delete`, a);
    expect(deleteOther.body.error.code).toBe('project_not_found');
    expect(sim.state().projects.find((p) => p.id === ofB)?.status).toBe('active');
  });

  it('rejects invalid project input with 400 VALIDATION_ERROR', async () => {
    await start();
    const a = await tenantWithKey();
    for (const body of [{ name: 'x' }, { name: '', region: 'eu' }, { name: 'x', region: 'EU West!' }]) {
      const res = await apiCall(sim, 'POST', '/projects/create', { ...a, body });
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('pages lists with items + nextCursor, 20 per page by default', async () => {
    await start();
    const a = await tenantWithKey();
    const ids: string[] = [];
    for (let i = 0; i < 45; i += 1) ids.push(await createProject(sim, a, `p${i}`));
    const seen: string[] = [];
    let cursor: string | null = null;
    const pageSizes: number[] = [];
    do {
      const query: string = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
      const page = await apiCall(sim, 'GET', `/projects${query}`, a);
      pageSizes.push(page.body.data.items.length);
      seen.push(...page.body.data.items.map((p: { id: string }) => p.id));
      cursor = page.body.data.nextCursor;
    } while (cursor);
    expect(pageSizes).toEqual([20, 20, 5]);
    expect(seen).toEqual(ids);
    const small = await apiCall(sim, 'GET', '/projects?limit=7', a);
    expect(small.body.data.items).toHaveLength(7);
    expect((await apiCall(sim, 'GET', '/projects?limit=1000', a)).body.error.code).toBe('VALIDATION_ERROR');
    expect((await apiCall(sim, 'GET', '/projects?cursor=bogus', a)).body.error.code).toBe('VALIDATION_ERROR');
  });

  it('serves lists as a bare array or as data + page when configured so', async () => {
    await start({ choices: { listStyle: 'bare' } });
    await createTenant(sim);
    await createTenant(sim);
    const bare = await apiCall(sim, 'GET', '/subaccounts');
    expect(Array.isArray(bare.body.data)).toBe(true);
    expect(bare.body.data).toHaveLength(2);
    await sim.close();

    await start({ choices: { listStyle: 'data-page', defaultPageSize: 2 } });
    for (let i = 0; i < 3; i += 1) await createTenant(sim);
    const first = await apiCall(sim, 'GET', '/subaccounts');
    expect(first.body.data.data).toHaveLength(2);
    const token = first.body.data.page.nextPageToken as string;
    const second = await apiCall(sim, 'GET', `/subaccounts?pageToken=${token}`);
    expect(second.body.data.data).toHaveLength(1);
    expect(second.body.data.page.nextPageToken).toBeNull();
  });

  it('replaces env vars wholesale: keys left out of the update are gone', async () => {
    await start();
    const a = await tenantWithKey();
    const projectId = await createProject(sim, a);
    const path = `/projects/${projectId}/env-vars`;
    expect((await apiCall(sim, 'GET', path, a)).body.data).toEqual({ variables: [] });
    const set = async (variables: unknown) => apiCall(sim, 'PUT', `${path}/update`, { ...a, body: { variables } });
    expect(
      (
        await set([
          { key: 'A', value: '1' },
          { key: 'B', value: '2' },
        ])
      ).status,
    ).toBe(200);
    const updated = await set([
      { key: 'B', value: '20' },
      { key: 'C', value: '3' },
    ]);
    expect(updated.body.data.variables).toEqual([
      { key: 'B', value: '20' },
      { key: 'C', value: '3' },
    ]);
    expect((await apiCall(sim, 'GET', path, a)).body.data.variables).toEqual([
      { key: 'B', value: '20' },
      { key: 'C', value: '3' },
    ]);
    expect((await set([])).body.data.variables).toEqual([]);
  });

  it('rejects duplicate or malformed env vars without changing the list', async () => {
    await start();
    const a = await tenantWithKey();
    const projectId = await createProject(sim, a);
    const path = `/projects/${projectId}/env-vars/update`;
    await apiCall(sim, 'PUT', path, { ...a, body: { variables: [{ key: 'KEEP', value: 'x' }] } });
    for (const variables of [
      [
        { key: 'A', value: '1' },
        { key: 'A', value: '2' },
      ],
      [{ key: '1BAD', value: 'x' }],
      [{ key: 'A', value: 5 }],
      'A=1',
    ]) {
      const res = await apiCall(sim, 'PUT', path, { ...a, body: { variables } });
      expect([res.status, res.body.error.code], JSON.stringify(variables)).toEqual([400, 'VALIDATION_ERROR']);
    }
    const current = await apiCall(sim, 'GET', `/projects/${projectId}/env-vars`, a);
    expect(current.body.data.variables).toEqual([{ key: 'KEEP', value: 'x' }]);
  });

  it('lets a tenant with live projects be closed by default (the orchestrator must check)', async () => {
    await start();
    const a = await tenantWithKey();
    await createProject(sim, a);
    const res = await apiCall(sim, 'POST', `/subaccounts/${a.id}/close`);
    expect(res.status).toBe(200);
    expect(sim.state().subaccounts[0]?.status).toBe('closed');
  });

  it('refuses to close a tenant with live projects when so configured', async () => {
    await start({ choices: { closeRefusesWithResources: true } });
    const a = await tenantWithKey();
    const projectId = await createProject(sim, a);
    const refused = await apiCall(sim, 'POST', `/subaccounts/${a.id}/close`);
    expect([refused.status, refused.body.error.code]).toEqual([409, 'SUBACCOUNT_HAS_RESOURCES']);
    await apiCall(sim, 'POST', `/projects/${projectId}/delete`, a);
    expect((await apiCall(sim, 'POST', `/subaccounts/${a.id}/close`)).status).toBe(200);
  });

  it("uses the configured name for an operating tenant's status", async () => {
    await start({ choices: { operatingStatus: 'operating' } });
    const id = await createTenant(sim);
    expect((await apiCall(sim, 'GET', `/subaccounts/${id}`)).body.data.status).toBe('operating');
  });
});
