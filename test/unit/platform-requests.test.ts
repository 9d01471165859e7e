import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  parseRetryAfter,
  PlatformIdempotencyConflictError,
  PlatformInputError,
  redactSecrets,
  SecretToken,
  type PlatformClient,
} from '../../src/platform/index.js';
import {
  sendData,
  sendError,
  startScriptedServer,
  type RecordedRequest,
  type ScriptedServer,
} from '../harness/scripted-server.js';

const PLATFORM_KEY = 'svpk_parentSecretValue123';
const PERSONAL = 'sv_humanToken42';
const TENANT_KEY = 'svsk_tenantSecretValue456';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function echoClient(data: unknown = { id: 'x_1' }): Promise<PlatformClient> {
  server = await startScriptedServer((_req, res) => sendData(res, 200, data));
  return createPlatformClient({
    baseUrl: server.apiBase,
    platformKey: PLATFORM_KEY,
    personalToken: PERSONAL,
    userAgent: 'ua-test/1',
  });
}
const last = (): RecordedRequest => server?.requests.at(-1) as RecordedRequest;

async function inputFailure(promise: Promise<unknown>): Promise<PlatformInputError> {
  const err = await promise.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(PlatformInputError);
  expect(server?.requests ?? []).toHaveLength(0);
  return err as PlatformInputError;
}

describe('platform client requests', () => {
  it('sends a transfer with the same idempotency key in the header and the body', async () => {
    const client = await echoClient({ id: 'tr_1', amountMicroUsd: '2500000' });
    const result = await client.transfer({
      subaccountId: 'sub_1',
      amountMicroUsd: '2500000',
      idempotencyKey: 'fund:acme:1',
    });
    const req = last();
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/api/v1/subaccounts/sub_1/wallet/transfers');
    expect(req.headers['idempotency-key']).toBe('fund:acme:1');
    expect(req.json).toEqual({ amountMicroUsd: '2500000', idempotencyKey: 'fund:acme:1' });
    expect(req.headers.authorization).toBe(`Bearer ${PLATFORM_KEY}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe('ua-test/1');
    expect(req.headers['x-service-subaccount']).toBeUndefined();
    expect(result.transfer).toMatchObject({
      id: 'tr_1',
      amountMicroUsd: '2500000',
      idempotencyKey: 'fund:acme:1',
      subaccountId: 'sub_1',
    });
  });

  it('treats a 2xx replay that names a different amount as an idempotency conflict', async () => {
    const client = await echoClient({ id: 'tr_1', amountMicroUsd: '999' });
    const err = await client
      .transfer({ subaccountId: 'sub_1', amountMicroUsd: '1000', idempotencyKey: 'k' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformIdempotencyConflictError);
  });

  it('sends Idempotency-Key on create and lifecycle calls', async () => {
    const client = await echoClient({ id: 'sub_1', status: 'suspended' });
    await client.createSubaccount({ name: 'Acme', externalRef: 'acme', idempotencyKey: 'onboard:acme' });
    expect(last().headers['idempotency-key']).toBe('onboard:acme');
    expect(last().json).toEqual({ name: 'Acme', externalRef: 'acme' });
    const suspended = await client.suspendSubaccount({ subaccountId: 'sub_1', idempotencyKey: 'suspend:acme:1' });
    expect(last().url).toBe('/api/v1/subaccounts/sub_1/suspend');
    expect(last().headers['idempotency-key']).toBe('suspend:acme:1');
    expect(suspended).toMatchObject({ status: 'suspended', subaccount: { id: 'sub_1' } });
    await client.closeSubaccount({ subaccountId: 'sub_1' });
    expect(last().headers['idempotency-key']).toBeUndefined();
  });

  it('reads a lifecycle answer that carries only a status', async () => {
    const client = await echoClient({ status: 'active' });
    const resumed = await client.resumeSubaccount({ subaccountId: 'sub_1' });
    expect(resumed).toMatchObject({ status: 'operating', rawStatus: 'active', subaccount: undefined });
  });

  it('sends ids as opaque path segments and refuses, before any request, one that could change the path', async () => {
    const client = await echoClient({ id: 'k1' });
    await client.revokeTenantKey({ subaccountId: 'sub_a-b.c', keyId: 'key_1:x' });
    expect(last().url).toBe('/api/v1/subaccounts/sub_a-b.c/api-keys/key_1%3Ax/revoke');
    const sent = server!.requests.length;
    for (const subaccountId of ['sub_a/b?c', '..', '.', 'a%2e', 'key 1#x', 'a\\b'])
      await expect(client.revokeTenantKey({ subaccountId, keyId: 'key_1' }), subaccountId).rejects.toMatchObject({
        name: 'PlatformInputError',
      });
    expect(server!.requests.length).toBe(sent);
  });

  it('sets X-Service-Subaccount for the platform-key context only', async () => {
    const client = await echoClient([]);
    await client.listProjects({ auth: { kind: 'platform', subaccountId: 'sub_1' } });
    expect(last().headers['x-service-subaccount']).toBe('sub_1');
    expect(last().headers.authorization).toBe(`Bearer ${PLATFORM_KEY}`);
    await client.listProjects({ auth: { kind: 'tenant-key', token: new SecretToken(TENANT_KEY) } });
    expect(last().headers['x-service-subaccount']).toBeUndefined();
    expect(last().headers.authorization).toBe(`Bearer ${TENANT_KEY}`);
    await client.listProjects({ auth: { kind: 'personal' } });
    expect(last().headers['x-service-subaccount']).toBeUndefined();
    expect(last().headers.authorization).toBe(`Bearer ${PERSONAL}`);
    // A personal token never carries tenant context (issue 15): refused before anything is sent.
    const sent = server!.requests.length;
    await expect(
      client.listProjects({ auth: { kind: 'personal', subaccountId: 'sub_2' } as never }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(server!.requests.length).toBe(sent);
  });

  it('uses the personal token for registry webhooks by default', async () => {
    const client = await echoClient({ id: 'wh_1' });
    await client.updateWebhook({
      projectId: 'proj_1',
      webhookId: 'wh_1',
      events: ['image.pushed'],
      secret: new SecretToken('whsec_1'),
    });
    expect(last()).toMatchObject({ method: 'PUT', url: '/api/v1/projects/proj_1/registry/webhooks/wh_1/update' });
    expect(last().headers.authorization).toBe(`Bearer ${PERSONAL}`);
    expect(last().json).toEqual({ events: ['image.pushed'], secret: 'whsec_1' });
    await client.deleteWebhook({ projectId: 'proj_1', webhookId: 'wh_1' });
    expect(last()).toMatchObject({ method: 'DELETE', url: '/api/v1/projects/proj_1/registry/webhooks/wh_1/delete' });
  });

  it('replaces env vars wholesale with a configurable body and path', async () => {
    server = await startScriptedServer((_req, res) => sendData(res, 200, { updated: true }));
    const client = createPlatformClient({
      baseUrl: server.apiBase,
      personalToken: PERSONAL,
      paths: { putEnvVars: '/projects/:projectId/env' },
      envVarsBody: (vars) => ({ env: vars }),
    });
    const result = await client.putEnvVars({ auth: { kind: 'personal' }, projectId: 'proj_1', vars: { A: '1' } });
    expect(last()).toMatchObject({ method: 'PUT', url: '/api/v1/projects/proj_1/env', json: { env: { A: '1' } } });
    expect(result.vars).toEqual({ A: '1' });
  });

  it('sends env vars as a list of { key, value } by default', async () => {
    const client = await echoClient({ variables: [{ key: 'A', value: '1' }] });
    await client.putEnvVars({ auth: { kind: 'personal' }, projectId: 'proj_1', vars: { A: '1' } });
    expect(last()).toMatchObject({
      url: '/api/v1/projects/proj_1/env-vars/update',
      json: { variables: [{ key: 'A', value: '1' }] },
    });
  });

  it('switches the project delete verb once on 405', async () => {
    server = await startScriptedServer((req, res) =>
      req.method === 'DELETE'
        ? sendError(res, 405, 'METHOD_NOT_ALLOWED', 'use POST')
        : sendData(res, 200, { id: 'proj_1' }),
    );
    const client = createPlatformClient({ baseUrl: server.apiBase, personalToken: PERSONAL });
    const result = await client.deleteProject({ auth: { kind: 'personal' }, projectId: 'proj_1' });
    expect(server.requests.map((r) => r.method)).toEqual(['DELETE', 'POST']);
    expect(result.requestId).toMatch(/^req_/);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(256)],
    ['with a space', 'a key'],
    ['non-ASCII', 'clé'],
    ['with a newline', 'a\nb'],
  ])('rejects an idempotency key that is %s before sending', async (_name, key) => {
    const client = await echoClient();
    const err = await inputFailure(
      client.transfer({ subaccountId: 'sub_1', amountMicroUsd: '1', idempotencyKey: key }),
    );
    expect(err.code).toBe('INVALID_IDEMPOTENCY_KEY');
    expect(err.message).toMatch(/idempotency key/);
  });

  it.each(['0', '-3', '1.5', ' 1', '01', ''])('rejects amount %j before sending', async (amount) => {
    const client = await echoClient();
    const err = await inputFailure(
      client.transfer({ subaccountId: 'sub_1', amountMicroUsd: amount, idempotencyKey: 'k' }),
    );
    expect(err.code).toBe('INVALID_INPUT');
  });

  it('rejects wrong credential kinds and missing credentials before sending', async () => {
    const client = await echoClient();
    await inputFailure(client.listProjects({ auth: { kind: 'tenant-key', token: PLATFORM_KEY } }));
    const noParent = createPlatformClient({ baseUrl: server?.apiBase ?? '' });
    const err = await inputFailure(noParent.listSubaccounts());
    expect(err.code).toBe('MISSING_CREDENTIALS');
    expect(() => createPlatformClient({ baseUrl: 'http://x/api/v1', platformKey: TENANT_KEY })).toThrow(
      PlatformInputError,
    );
    await inputFailure(client.getSubaccount({ subaccountId: '' }));
    await inputFailure(client.listProjects({ auth: { kind: 'platform', subaccountId: 'sub\r\nX-Evil: 1' } }));
  });
});

describe('secret handling', () => {
  it('never shows a SecretToken except through reveal()', () => {
    const token = new SecretToken(TENANT_KEY);
    const shown = [String(token), `${token}`, JSON.stringify({ token }), inspect({ token }), inspect(token)];
    for (const text of shown) expect(text).not.toContain('tenantSecretValue456');
    expect(String(token)).toBe('[redacted svsk_…]');
    expect(JSON.stringify({ token })).toBe('{"token":"[redacted svsk_…]"}');
    expect(Object.keys(token)).toEqual([]);
    expect(token.reveal()).toBe(TENANT_KEY);
    expect(String(new SecretToken('opaque'))).toBe('[redacted]');
  });

  it('redacts every token kind and bearer credentials in free text', () => {
    const text = `a ${TENANT_KEY}, "${PLATFORM_KEY}" and sv_abc; Authorization: Bearer xyz.secret`;
    const redacted = redactSecrets(text);
    expect(redacted).toBe(
      'a [redacted svsk_…], "[redacted svpk_…]" and [redacted sv_…]; Authorization: Bearer [redacted]',
    );
    expect(redactSecrets('csv_file stays')).toBe('csv_file stays');
  });

  it('parses Retry-After seconds and dates', () => {
    const now = Date.parse('2025-01-01T00:00:00.000Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
