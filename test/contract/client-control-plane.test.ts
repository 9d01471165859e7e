import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  PlatformDefiniteError,
  PlatformInputError,
  PlatformNotFoundError,
  PlatformTenantStateError,
  type PlatformClient,
} from '../../src/platform/index.js';
import {
  DEFAULT_PAID_BALANCE_MICRO_USD,
  DEFAULT_PARENT_ID,
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
  DEFAULT_PROMO_BALANCE_MICRO_USD,
  startSimulator,
  type RunningSimulator,
} from '../../src/sim/index.js';
import { failure } from '../harness/failures.js';

const OTHER_PLATFORM_KEY = 'svpk_sim_DO_NOT_USE_parent_0002';

let sim: RunningSimulator;
let client: PlatformClient;
let other: PlatformClient;
let seq = 0;
const key = (label: string) => `${label}-${++seq}`;

beforeEach(async () => {
  sim = await startSimulator({
    seed: {
      parents: [
        {
          id: DEFAULT_PARENT_ID,
          paidBalanceMicroUsd: DEFAULT_PAID_BALANCE_MICRO_USD,
          promoBalanceMicroUsd: DEFAULT_PROMO_BALANCE_MICRO_USD,
          platformKeys: [DEFAULT_PLATFORM_KEY],
          personalTokens: [DEFAULT_PERSONAL_TOKEN],
          activeKeyLimit: 5,
        },
        {
          id: 'parent_sim_0002',
          paidBalanceMicroUsd: '0',
          promoBalanceMicroUsd: '0',
          platformKeys: [OTHER_PLATFORM_KEY],
          personalTokens: [],
          activeKeyLimit: 5,
        },
      ],
    },
  });
  client = createPlatformClient({
    baseUrl: sim.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    personalToken: DEFAULT_PERSONAL_TOKEN,
  });
  other = createPlatformClient({ baseUrl: sim.apiBase, platformKey: OTHER_PLATFORM_KEY });
});
afterEach(async () => {
  await sim.close();
});

async function newTenant(name = 'Acme') {
  const { subaccount } = await client.createSubaccount({
    name,
    externalRef: key('ref'),
    idempotencyKey: key('create'),
  });
  return subaccount;
}

describe('client against the simulator: tenants', () => {
  it('creates, reads and lists tenants with request ids', async () => {
    const created = await client.createSubaccount({
      name: 'Acme',
      externalRef: 'acme-1',
      idempotencyKey: 'onboard:acme-1',
    });
    expect(created.requestId).toMatch(/^req_/);
    expect(created.subaccount).toMatchObject({
      name: 'Acme',
      externalRef: 'acme-1',
      status: 'operating',
      parentId: DEFAULT_PARENT_ID,
    });
    expect(created.subaccount.id).toMatch(/^sub_/);
    const read = await client.getSubaccount({ subaccountId: created.subaccount.id });
    expect(read.subaccount).toEqual(created.subaccount);
    const listed = await client.listSubaccounts();
    expect(listed.subaccounts.map((s) => s.id)).toEqual([created.subaccount.id]);
  });

  it('replays a retried create under the same key instead of creating a second tenant', async () => {
    const input = { name: 'Acme', externalRef: 'acme-1', idempotencyKey: 'onboard:acme-1' };
    const first = await client.createSubaccount(input);
    const again = await client.createSubaccount(input);
    expect(again.subaccount.id).toBe(first.subaccount.id);
    expect(sim.state().subaccounts).toHaveLength(1);
  });

  it('lists every tenant across pages', async () => {
    for (let i = 0; i < 45; i += 1) await newTenant(`T${i}`);
    const listed = await client.listSubaccounts();
    expect(listed.subaccounts).toHaveLength(45);
    expect(new Set(listed.subaccounts.map((s) => s.id)).size).toBe(45);
    expect(listed.requestIds.length).toBeGreaterThan(1);
  });

  it('runs the lifecycle: suspend, resume, close; a closed tenant is a 404', async () => {
    const tenant = await newTenant();
    const suspended = await client.suspendSubaccount({ subaccountId: tenant.id, idempotencyKey: key('suspend') });
    expect(suspended).toMatchObject({ status: 'suspended', subaccount: { id: tenant.id } });
    const resumed = await client.resumeSubaccount({ subaccountId: tenant.id });
    expect(resumed.status).toBe('operating');
    const closed = await client.closeSubaccount({ subaccountId: tenant.id, idempotencyKey: key('close') });
    expect(closed.status).toBe('closed');
    const err = await failure(client.getSubaccount({ subaccountId: tenant.id }));
    expect(err).toBeInstanceOf(PlatformNotFoundError);
  });

  it('answers absent, closed and foreign tenants with the same definite 404', async () => {
    const mine = await newTenant();
    const absent = await failure(client.getSubaccount({ subaccountId: 'sub_doesnotexist' }));
    const foreign = await failure(other.getSubaccount({ subaccountId: mine.id }));
    for (const err of [absent, foreign]) {
      expect(err).toBeInstanceOf(PlatformNotFoundError);
      expect(err).toMatchObject({ code: 'NOT_FOUND', classification: 'definite', retryable: false, status: 404 });
      expect(err.requestId).toMatch(/^req_/);
    }
    expect(absent.platformCode).toBe(foreign.platformCode);
  });
});

describe('client against the simulator: the Errors table', () => {
  it('403 SUBACCOUNT_SCOPE: a platform key targeting a tenant outside its parent', async () => {
    const mine = await newTenant();
    const err = await failure(other.listProjects({ auth: { kind: 'platform', subaccountId: mine.id } }));
    expect(err).toBeInstanceOf(PlatformDefiniteError);
    expect(err).toMatchObject({ code: 'SUBACCOUNT_SCOPE', status: 403, retryable: false });
  });

  it(
    '403 SUBACCOUNT_SCOPE: a tenant key given conflicting context (by a header-adding ' +
      'proxy; the client never sends one)',
    async () => {
      const a = await newTenant('A');
      const b = await newTenant('B');
      const { token } = await client.createTenantKey({ subaccountId: a.id, name: 'a' });
      const proxy: typeof fetch = (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('X-Service-Subaccount', b.id);
        return fetch(input, { ...init, headers });
      };
      const proxied = createPlatformClient({ baseUrl: sim.apiBase, fetch: proxy });
      const err = await failure(proxied.listProjects({ auth: { kind: 'tenant-key', token } }));
      expect(err).toMatchObject({ code: 'SUBACCOUNT_SCOPE', classification: 'definite' });
    },
  );

  it('403 SUBACCOUNT_SUSPENDED: tenant-key and platform-key calls under a suspended tenant', async () => {
    const tenant = await newTenant();
    const { token } = await client.createTenantKey({ subaccountId: tenant.id, name: 'ci' });
    await client.suspendSubaccount({ subaccountId: tenant.id });
    for (const auth of [
      { kind: 'tenant-key', token } as const,
      { kind: 'platform', subaccountId: tenant.id } as const,
    ]) {
      const err = await failure(client.listProjects({ auth }));
      expect(err).toBeInstanceOf(PlatformTenantStateError);
      expect(err).toMatchObject({ code: 'SUBACCOUNT_SUSPENDED', classification: 'tenant-state', status: 403 });
    }
    await client.resumeSubaccount({ subaccountId: tenant.id });
    await expect(client.listProjects({ auth: { kind: 'tenant-key', token } })).resolves.toMatchObject({ projects: [] });
  });

  it('409 API_KEY_LIMIT_REACHED and 409 INSUFFICIENT_BALANCE are business states', async () => {
    const tenant = await newTenant();
    for (let i = 0; i < 3; i += 1) await client.createTenantKey({ subaccountId: tenant.id, name: `k${i}` });
    const cap = await failure(client.createTenantKey({ subaccountId: tenant.id, name: 'one too many' }));
    expect(cap).toMatchObject({ code: 'API_KEY_LIMIT_REACHED', classification: 'business-state', status: 409 });
    const poor = await failure(
      client.transfer({ subaccountId: tenant.id, amountMicroUsd: '999999999999', idempotencyKey: key('fund') }),
    );
    expect(poor).toMatchObject({ code: 'INSUFFICIENT_BALANCE', classification: 'business-state', status: 409 });
  });

  it('400 IDEMPOTENCY_KEY_REQUIRED when a proxy strips the key (the client refuses to send without one)', async () => {
    const stripper: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.delete('Idempotency-Key');
      return fetch(input, { ...init, headers });
    };
    const stripped = createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY, fetch: stripper });
    const err = await failure(stripped.createSubaccount({ name: 'A', externalRef: 'a', idempotencyKey: 'k' }));
    expect(err).toMatchObject({ code: 'IDEMPOTENCY_KEY_REQUIRED', classification: 'definite', status: 400 });
    const local = await failure(client.createSubaccount({ name: 'A', externalRef: 'a', idempotencyKey: '' }));
    expect(local).toBeInstanceOf(PlatformInputError);
  });

  it('404 project lookup keeps the lowercase platform code', async () => {
    const err = await failure(client.getProject({ auth: { kind: 'personal' }, projectId: 'proj_nope' }));
    expect(err).toBeInstanceOf(PlatformNotFoundError);
    expect(err.platformCode).toBe('project_not_found');
  });
});

describe('client against the simulator: auth rules', () => {
  it('uses parent credentials for the control plane, with a personal token when there is no platform key', async () => {
    const human = createPlatformClient({ baseUrl: sim.apiBase, personalToken: DEFAULT_PERSONAL_TOKEN });
    const { subaccount } = await human.createSubaccount({ name: 'H', externalRef: 'h', idempotencyKey: 'h-1' });
    expect(subaccount.parentId).toBe(DEFAULT_PARENT_ID);
  });

  it('cannot be used to make control-plane calls with a tenant key', async () => {
    expect(() => createPlatformClient({ baseUrl: sim.apiBase, platformKey: 'svsk_whatever_tenant' })).toThrow(
      PlatformInputError,
    );
  });

  it('denies a revoked tenant key with a definite 401', async () => {
    const tenant = await newTenant();
    const created = await client.createTenantKey({ subaccountId: tenant.id, name: 'old' });
    await client.revokeTenantKey({ subaccountId: tenant.id, keyId: created.key.id });
    const err = await failure(client.listProjects({ auth: { kind: 'tenant-key', token: created.token } }));
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED', classification: 'definite', status: 401 });
  });

  it('denies machine credentials on registry webhook management (personal token only)', async () => {
    const tenant = await newTenant();
    const platform = { kind: 'platform', subaccountId: tenant.id } as const;
    const { project } = await client.createProject({ auth: platform, name: 'web', region: 'eu-central' });
    const err = await failure(client.listWebhooks({ auth: platform, projectId: project.id }));
    expect(err).toMatchObject({ code: 'FORBIDDEN', classification: 'definite', status: 403 });
    const { webhooks } = await client.listWebhooks({ auth: { kind: 'personal' }, projectId: project.id });
    expect(webhooks).toEqual([]);
    const noPersonal = createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
    expect(await failure(noPersonal.listWebhooks({ projectId: project.id }))).toBeInstanceOf(PlatformInputError);
  });
});
