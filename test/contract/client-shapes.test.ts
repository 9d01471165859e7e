import { afterEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  PlatformIdempotencyConflictError,
  type PlatformClient,
} from '../../src/platform/index.js';
import { SHAPE_NAMES, SIM_SHAPES } from '../../src/sim/choices.js';
import {
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
  startSimulator,
  type RunningSimulator,
} from '../../src/sim/index.js';
import { apiCall } from '../harness/sim-calls.js';

// The named platform shapes (SIM_SHAPES): the same client, configured the same way, against each.

let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function setup(shape: keyof typeof SIM_SHAPES, pageSize?: number): Promise<PlatformClient> {
  sim = await startSimulator({ choices: SIM_SHAPES[shape] });
  return createPlatformClient({
    baseUrl: sim.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    personalToken: DEFAULT_PERSONAL_TOKEN,
    ...(pageSize ? { pageSize } : {}),
  });
}

describe.each(SHAPE_NAMES)('client against the %s platform shape', (shape) => {
  it('lists every tenant across pages (whatever limit it asks for) and reads the operating status', async () => {
    const client = await setup(shape, 50);
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1)
      ids.push(
        (await client.createSubaccount({ name: `T${i}`, externalRef: `ref-${i}`, idempotencyKey: `c-${i}` })).subaccount
          .id,
      );
    const listed = await client.listSubaccounts();
    expect(listed.subaccounts.map((s) => [s.id, s.externalRef, s.status])).toEqual(
      ids.map((id, i) => [id, `ref-${i}`, 'operating']),
    );
  });

  it('finds last use of a key, never used then used, with the counter where shown', async () => {
    const client = await setup(shape);
    const { subaccount } = await client.createSubaccount({ name: 'A', externalRef: 'a', idempotencyKey: 'a' });
    const { key, token } = await client.createTenantKey({ subaccountId: subaccount.id, name: 'k' });
    const before = (await client.listTenantKeys({ subaccountId: subaccount.id })).keys.find((k) => k.id === key.id)!;
    expect(before).toMatchObject({ status: 'active', lastUse: { state: 'never' } });
    await client.listProjects({ auth: { kind: 'tenant-key', token } });
    const after = (await client.listTenantKeys({ subaccountId: subaccount.id })).keys.find((k) => k.id === key.id)!;
    expect(after.lastUse).toMatchObject({ state: 'seen', at: expect.stringMatching(/Z$/) });
    expect(after.lastUseKnown).toBe(true);
    if (shape === 'alt') expect(after.useCount).toBe(1);
  });

  it(
    "manages a tenant project's webhook with the personal token on the project id, " + 'and reads its deliveries',
    async () => {
      const client = await setup(shape);
      const { subaccount } = await client.createSubaccount({ name: 'A', externalRef: 'a', idempotencyKey: 'a' });
      const { project } = await client.createProject({
        auth: { kind: 'platform', subaccountId: subaccount.id },
        name: 'web',
        region: 'eu-central',
      });
      const auth = { kind: 'personal' } as const;
      const { webhook } = await client.createWebhook({
        auth,
        projectId: project.id,
        label: 'ci',
        url: 'http://127.0.0.1:9/hook',
        events: ['*'],
      });
      expect((await client.listWebhooks({ auth, projectId: project.id })).webhooks.map((w) => w.id)).toEqual([
        webhook.id,
      ]);
      await fetch(`${sim!.url}/__sim/registry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ projectId: project.id, event: 'image.pushed', image: 'web', tag: '1' }),
      });
      const { deliveries } = await client.listWebhookDeliveries({ auth, projectId: project.id, webhookId: webhook.id });
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({ event: 'image.pushed', rawStatus: 'pending' });
    },
  );

  it('answers a retried create with the original tenant or a conflict the caller can reconcile', async () => {
    const client = await setup(shape);
    const input = { name: 'Acme', externalRef: 'acme', idempotencyKey: 'onboard:acme' };
    const first = await client.createSubaccount(input);
    const again = await client.createSubaccount(input).catch((e: unknown) => e);
    if (again instanceof PlatformIdempotencyConflictError) {
      expect(
        (await client.listSubaccounts()).subaccounts.filter((s) => s.externalRef === 'acme').map((s) => s.id),
      ).toEqual([first.subaccount.id]);
    } else {
      expect(again).toMatchObject({ subaccount: { id: first.subaccount.id } });
    }
    const reused = await client.createSubaccount({ ...input, name: 'Other' }).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(PlatformIdempotencyConflictError);
  });
});

describe('the alt shape is the platform of issue 15', () => {
  it('refuses a personal token with X-Service-Subaccount (403 SUBACCOUNT_SCOPE)', async () => {
    await setup('alt');
    const created = await apiCall(sim!, 'POST', '/subaccounts/create', {
      idempotencyKey: 'x',
      body: { name: 'A', externalRef: 'a' },
    });
    const res = await apiCall(sim!, 'GET', '/projects', {
      token: DEFAULT_PERSONAL_TOKEN,
      subaccount: created.body.data.id,
    });
    expect([res.status, res.body.error.code]).toEqual([403, 'SUBACCOUNT_SCOPE']);
  });

  it(
    'pages two at a time whatever limit is asked, nests last use under usage, and ' + 'answers 422 on key reuse',
    async () => {
      await setup('alt');
      for (let i = 0; i < 3; i += 1)
        await apiCall(sim!, 'POST', '/subaccounts/create', {
          idempotencyKey: `k${i}`,
          body: { name: 'A', externalRef: `a${i}` },
        });
      const page = await apiCall(sim!, 'GET', '/subaccounts?limit=100');
      expect(page.body.data.items).toHaveLength(2);
      expect(page.body.data.nextCursor).toEqual(expect.any(String));
      expect(page.body.data.items[0].status).toBe('enabled');
      const tenant = page.body.data.items[0].id as string;
      const key = await apiCall(sim!, 'POST', `/subaccounts/${tenant}/api-keys/create`, { body: { name: 'k' } });
      expect(key.status).toBe(201);
      expect(key.body.data).toMatchObject({
        state: 'active',
        usage: { lastUsedAt: null, requestCount: 0 },
        tokenHint: expect.any(String),
      });
      const reuse = await apiCall(sim!, 'POST', '/subaccounts/create', {
        idempotencyKey: 'k0',
        body: { name: 'B', externalRef: 'b' },
      });
      expect(reuse.status).toBe(422);
    },
  );

  it('replays a refused request with 409 instead of acting on it again', async () => {
    await setup('alt');
    const created = await apiCall(sim!, 'POST', '/subaccounts/create', {
      idempotencyKey: 'x',
      body: { name: 'A', externalRef: 'a' },
    });
    const path = `/subaccounts/${created.body.data.id}/wallet/transfers`;
    const body = { amountMicroUsd: '999999999999999', idempotencyKey: 't1' };
    expect((await apiCall(sim!, 'POST', path, { idempotencyKey: 't1', body })).body.error.code).toBe(
      'INSUFFICIENT_BALANCE',
    );
    const again = await apiCall(sim!, 'POST', path, { idempotencyKey: 't1', body });
    expect([again.status, again.body.error.code]).toEqual([409, 'IDEMPOTENCY_KEY_IN_USE']);
  });
});

describe('the snake shape', () => {
  it('answers in snake_case, last use as last_used: { at }', async () => {
    await setup('snake');
    const created = await apiCall(sim!, 'POST', '/subaccounts/create', {
      idempotencyKey: 'x',
      body: { name: 'A', externalRef: 'a' },
    });
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ external_ref: 'a', created_at: expect.any(String) });
    const key = await apiCall(sim!, 'POST', `/subaccounts/${created.body.data.id}/api-keys/create`, {
      body: { name: 'k' },
    });
    expect(key.body.data).toMatchObject({ last_used: null, revoked_at: null });
    expect(created.body.meta.requestId).toMatch(/^req_/);
  });
});
