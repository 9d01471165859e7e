import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PlatformError } from '../../src/platform/index.js';
import { simulatorWithSubaccount } from '../harness/sim-subaccount.js';

const setup = simulatorWithSubaccount();

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PlatformError);
  return (err as PlatformError).code;
}

describe('client against the simulator: keys', () => {
  it('returns the token once, wrapped, and never lists it', async () => {
    const { client, subaccountId } = await setup();
    const created = await client.createTenantKey({ subaccountId, name: 'ci' });
    expect(created.token.prefix).toBe('svsk_');
    expect(created.key).toMatchObject({ name: 'ci', status: 'active', subaccountId });
    const secret = created.token.reveal();
    expect(JSON.stringify(created)).not.toContain(secret);
    expect(inspect(created, { depth: 10 })).not.toContain(secret);
    const listed = await client.listTenantKeys({ subaccountId });
    expect(listed.keys.map((k) => k.id)).toEqual([created.key.id]);
    expect(JSON.stringify(listed)).not.toContain(secret);
  });

  it('enforces the tenant cap and frees a slot on revoke', async () => {
    const { client, subaccountId } = await setup();
    const keys = [];
    for (let i = 0; i < 3; i += 1) keys.push(await client.createTenantKey({ subaccountId, name: `k${i}` }));
    expect(await codeOf(client.createTenantKey({ subaccountId, name: 'k3' }))).toBe('API_KEY_LIMIT_REACHED');
    const revoked = await client.revokeTenantKey({ subaccountId, keyId: keys[0]?.key.id ?? '' });
    expect(revoked.key).toMatchObject({ id: keys[0]?.key.id, status: 'revoked' });
    await client.createTenantKey({ subaccountId, name: 'k3' });
    const { keys: listed } = await client.listTenantKeys({ subaccountId });
    expect(listed.filter((k) => k.status === 'active')).toHaveLength(3);
  });

  it('enforces the parent cap on platform keys', async () => {
    const { client } = await setup();
    const existing = (await client.listPlatformKeys()).keys.filter((k) => k.status === 'active').length;
    for (let i = existing; i < 5; i += 1) {
      const created = await client.createPlatformKey({ name: `p${i}` });
      expect(created.token.prefix).toBe('svpk_');
    }
    expect(await codeOf(client.createPlatformKey({ name: 'p5' }))).toBe('API_KEY_LIMIT_REACHED');
    const last = (await client.listPlatformKeys()).keys.at(-1);
    await client.revokePlatformKey({ keyId: last?.id ?? '' });
    await client.createPlatformKey({ name: 'p5' });
  });

  it('shows last use after the key is used', async () => {
    const { client, subaccountId } = await setup();
    const created = await client.createTenantKey({ subaccountId, name: 'ci' });
    const before = (await client.listTenantKeys({ subaccountId })).keys[0];
    expect(before).toMatchObject({ lastUseKnown: true, lastUsedAt: null });
    await client.listProjects({ auth: { kind: 'tenant-key', token: created.token } });
    const after = (await client.listTenantKeys({ subaccountId })).keys[0];
    expect(after?.lastUseKnown).toBe(true);
    expect(after?.lastUsedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('says visibly when the platform does not show last use', async () => {
    const { client, subaccountId } = await setup({ showLastUsed: false });
    const created = await client.createTenantKey({ subaccountId, name: 'ci' });
    await client.listProjects({ auth: { kind: 'tenant-key', token: created.token } });
    const [record] = (await client.listTenantKeys({ subaccountId })).keys;
    expect(record).toMatchObject({ lastUseKnown: false, lastUsedAt: undefined });
  });

  it('reads key ids under another field name', async () => {
    const { client, subaccountId } = await setup({ keyIdField: 'keyId' });
    const created = await client.createTenantKey({ subaccountId, name: 'ci' });
    expect(created.key.id).toMatch(/.+/);
    const listed = await client.listTenantKeys({ subaccountId });
    expect(listed.keys[0]?.id).toBe(created.key.id);
    await client.revokeTenantKey({ subaccountId, keyId: created.key.id });
  });

  it('overlaps keys for rotation: old and new both work until the old one is revoked', async () => {
    const { client, subaccountId } = await setup();
    const old = await client.createTenantKey({ subaccountId, name: 'v1' });
    const fresh = await client.createTenantKey({ subaccountId, name: 'v2' });
    await client.listProjects({ auth: { kind: 'tenant-key', token: fresh.token } });
    await client.listProjects({ auth: { kind: 'tenant-key', token: old.token } });
    await client.revokeTenantKey({ subaccountId, keyId: old.key.id });
    expect(await codeOf(client.listProjects({ auth: { kind: 'tenant-key', token: old.token } }))).toBe(
      'UNAUTHENTICATED',
    );
    await client.listProjects({ auth: { kind: 'tenant-key', token: fresh.token } });
  });
});
