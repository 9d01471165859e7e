import { afterEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  PlatformIdempotencyConflictError,
  type PlatformClient,
} from '../../src/platform/index.js';
import {
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
  ListStyle,
  ReplayStyle,
  startSimulator,
  type RunningSimulator,
  type SimChoices,
} from '../../src/sim/index.js';

// The client is written against the contract; the simulator's answers to "not shown" are switches. Every list
// style and replay style must work without configuring the client differently.

let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function setup(choices: Partial<SimChoices>, pageSize?: number): Promise<PlatformClient> {
  sim = await startSimulator({ choices });
  return createPlatformClient({
    baseUrl: sim.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    personalToken: DEFAULT_PERSONAL_TOKEN,
    ...(pageSize === undefined ? {} : { pageSize }),
  });
}

describe.each(Object.values(ListStyle))('client against the simulator with listStyle %s', (listStyle) => {
  it('fetches every tenant, project, key and webhook across pages', async () => {
    const client = await setup({ listStyle, defaultPageSize: 4 });
    const ids: string[] = [];
    for (let i = 0; i < 11; i += 1) {
      const { subaccount } = await client.createSubaccount({
        name: `T${i}`,
        externalRef: `ref-${i}`,
        idempotencyKey: `create-${i}`,
      });
      ids.push(subaccount.id);
    }
    const tenants = await client.listSubaccounts();
    expect(tenants.subaccounts.map((s) => s.id)).toEqual(ids);
    if (listStyle !== 'bare') expect(tenants.requestIds).toHaveLength(3);

    const tenantId = ids[0] ?? '';
    const auth = { kind: 'platform', subaccountId: tenantId } as const;
    const projectIds: string[] = [];
    for (let i = 0; i < 9; i += 1)
      projectIds.push((await client.createProject({ auth, name: `p${i}`, region: 'eu-central' })).project.id);
    expect((await client.listProjects({ auth })).projects.map((p) => p.id)).toEqual(projectIds);

    for (let i = 0; i < 3; i += 1) await client.createTenantKey({ subaccountId: tenantId, name: `k${i}` });
    expect((await client.listTenantKeys({ subaccountId: tenantId })).keys).toHaveLength(3);
    expect((await client.listPlatformKeys()).keys.length).toBeGreaterThanOrEqual(1);

    const projectId = projectIds[0] ?? '';
    const personal = { kind: 'personal' } as const;
    for (let i = 0; i < 5; i += 1) {
      await client.createWebhook({
        auth: personal,
        projectId,
        label: `w${i}`,
        url: 'https://hooks.example/x',
        events: ['*'],
      });
    }
    expect((await client.listWebhooks({ auth: personal, projectId })).webhooks).toHaveLength(5);
  });

  it('works with a configured page size (sent as limit=)', async () => {
    const client = await setup({ listStyle }, 2);
    for (let i = 0; i < 5; i += 1)
      await client.createSubaccount({ name: `T${i}`, externalRef: `ref-${i}`, idempotencyKey: `c-${i}` });
    expect((await client.listSubaccounts()).subaccounts).toHaveLength(5);
  });
});

describe('client against the simulator with each replay style', () => {
  it('original: a retried create returns the same tenant', async () => {
    const client = await setup({ replay: ReplayStyle.Original });
    const input = { name: 'Acme', externalRef: 'acme', idempotencyKey: 'onboard:acme' };
    const first = await client.createSubaccount(input);
    expect((await client.createSubaccount(input)).subaccount.id).toBe(first.subaccount.id);
  });

  it('conflict: a retried create is IDEMPOTENCY_CONFLICT and the tenant is found by listing', async () => {
    const client = await setup({ replay: ReplayStyle.Conflict });
    const input = { name: 'Acme', externalRef: 'acme', idempotencyKey: 'onboard:acme' };
    const first = await client.createSubaccount(input);
    const err = await client.createSubaccount(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformIdempotencyConflictError);
    const { subaccounts } = await client.listSubaccounts();
    expect(subaccounts.filter((s) => s.externalRef === 'acme').map((s) => s.id)).toEqual([first.subaccount.id]);
  });

  it('reads the operating status whatever the platform calls it', async () => {
    const client = await setup({ operatingStatus: 'running' });
    const { subaccount } = await client.createSubaccount({ name: 'A', externalRef: 'a', idempotencyKey: 'a' });
    expect(subaccount).toMatchObject({ status: 'operating', rawStatus: 'running' });
  });
});
