import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  PlatformProtocolError,
  SecretToken,
  type PlatformClient,
} from '../../src/platform/index.js';
import { sendData, sendJson, startScriptedServer, type ScriptedServer } from '../harness/scripted-server.js';

const PLATFORM_KEY = 'svpk_parentSecretValue123';
const NEW_TOKEN = 'svsk_brandNewTenantSecret789';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function answering(data: unknown): Promise<PlatformClient> {
  server = await startScriptedServer((_req, res) => sendData(res, 200, data));
  return createPlatformClient({ baseUrl: server.apiBase, platformKey: PLATFORM_KEY });
}

async function protocolFailure(promise: Promise<unknown>): Promise<PlatformProtocolError> {
  const err = await promise.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(PlatformProtocolError);
  return err as PlatformProtocolError;
}

describe('platform client record tolerance', () => {
  it('reads a tenant with extra fields, a parent object and limits', async () => {
    const client = await answering({
      id: 'sub_1',
      name: 'Acme',
      external_ref: 'acme-1',
      status: 'operating',
      parent: { id: 'par_1', name: 'ignored' },
      limits: { projects: 5 },
      brandNewField: { nested: true },
    });
    const { subaccount, requestId } = await client.getSubaccount({ subaccountId: 'sub_1' });
    expect(subaccount).toEqual({
      id: 'sub_1',
      name: 'Acme',
      externalRef: 'acme-1',
      status: 'operating',
      rawStatus: 'operating',
      parentId: 'par_1',
      limits: { projects: 5 },
      createdAt: undefined,
    });
    expect(requestId).toMatch(/^req_/);
  });

  it.each([
    ['active', 'operating'],
    ['OK', 'operating'],
    ['enabled', 'operating'],
    ['running', 'operating'],
    ['suspended', 'suspended'],
    ['closed', 'closed'],
    ['hibernating', 'unknown'],
  ])('normalises tenant status %s to %s and keeps the raw word', async (raw, normalised) => {
    const client = await answering({ id: 'sub_1', status: raw });
    const { subaccount } = await client.getSubaccount({ subaccountId: 'sub_1' });
    expect(subaccount.status).toBe(normalised);
    expect(subaccount.rawStatus).toBe(raw);
  });

  it('reads a tenant wrapped under its resource name', async () => {
    const client = await answering({ subaccount: { id: 'sub_9', status: 'active' } });
    expect((await client.getSubaccount({ subaccountId: 'sub_9' })).subaccount.id).toBe('sub_9');
  });

  it('reads the payload under a key other than data', async () => {
    server = await startScriptedServer((_req, res) =>
      sendJson(res, 200, { subaccount: { id: 'sub_7' }, meta: { requestId: 'req_abc' } }),
    );
    const client = createPlatformClient({ baseUrl: server.apiBase, platformKey: PLATFORM_KEY });
    const result = await client.getSubaccount({ subaccountId: 'sub_7' });
    expect(result).toMatchObject({ requestId: 'req_abc', subaccount: { id: 'sub_7' } });
  });

  it('fails with a protocol error carrying the request id when a created tenant has no id', async () => {
    const client = await answering({ name: 'Acme', externalRef: 'acme-1' });
    const err = await protocolFailure(
      client.createSubaccount({ name: 'Acme', externalRef: 'acme-1', idempotencyKey: 'k1' }),
    );
    expect(err.code).toBe('PROTOCOL_ERROR');
    expect(err.classification).toBe('definite');
    expect(err.requestId).toMatch(/^req_/);
  });

  it('fails with a protocol error on a 2xx body that is not JSON', async () => {
    server = await startScriptedServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    const client = createPlatformClient({ baseUrl: server.apiBase, platformKey: PLATFORM_KEY });
    await protocolFailure(client.getSubaccount({ subaccountId: 'sub_1' }));
  });

  it.each([
    ['id + lastUsedAt', { id: 'k1', lastUsedAt: '2025-01-01T00:00:00.000Z' }, '2025-01-01T00:00:00.000Z', true],
    [
      'keyId + last_used_at',
      { keyId: 'k1', last_used_at: '2025-01-01T00:00:00.000Z' },
      '2025-01-01T00:00:00.000Z',
      true,
    ],
    ['key_id + lastUsed', { key_id: 'k1', lastUsed: '2025-01-01T00:00:00.000Z' }, '2025-01-01T00:00:00.000Z', true],
    ['lastUsedTime as epoch ms', { id: 'k1', lastUsedTime: 1735689600000 }, '2025-01-01T00:00:00.000Z', true],
    ['lastUsedAt: null (never used)', { id: 'k1', lastUsedAt: null }, null, true],
    ['no last-use field', { id: 'k1' }, undefined, false],
  ])('reads a key record with %s', async (_name, record, lastUsedAt, lastUseKnown) => {
    const client = await answering({ items: [{ ...record, status: 'active', whatever: 1 }] });
    const { keys } = await client.listTenantKeys({ subaccountId: 'sub_1' });
    expect(keys[0]).toMatchObject({ id: 'k1', status: 'active', lastUsedAt, lastUseKnown });
  });

  it.each([
    ['revoked', 'revoked'],
    ['disabled', 'revoked'],
    ['ACTIVE', 'active'],
    ['rotating', 'unknown'],
  ])('normalises key status %s to %s', async (raw, normalised) => {
    const client = await answering([{ id: 'k1', status: raw }]);
    const { keys } = await client.listTenantKeys({ subaccountId: 'sub_1' });
    expect(keys[0]).toMatchObject({ status: normalised, rawStatus: raw });
  });

  it('derives key status from boolean hints when there is no status word', async () => {
    const client = await answering([
      { id: 'k1', revoked: true },
      { id: 'k2', active: true },
    ]);
    const { keys } = await client.listTenantKeys({ subaccountId: 'sub_1' });
    expect(keys.map((k) => k.status)).toEqual(['revoked', 'active']);
  });

  it.each([
    ['flat with token', { id: 'key_1', name: 'ci', token: NEW_TOKEN }],
    ['flat with secret', { keyId: 'key_1', name: 'ci', secret: NEW_TOKEN }],
    ['nested record and token', { key: { id: 'key_1', name: 'ci' }, token: NEW_TOKEN }],
    ['record with key as the secret', { id: 'key_1', name: 'ci', key: NEW_TOKEN }],
    ['apiKey as the secret', { key_id: 'key_1', apiKey: NEW_TOKEN }],
  ])('reads a created key (%s) and never shows its token', async (_name, data) => {
    const client = await answering(data);
    const result = await client.createTenantKey({ subaccountId: 'sub_1', name: 'ci' });
    expect(result.key.id).toBe('key_1');
    expect(result.token).toBeInstanceOf(SecretToken);
    expect(result.token.reveal()).toBe(NEW_TOKEN);
    for (const text of [
      JSON.stringify(result),
      inspect(result, { depth: 10 }),
      String(result.token),
      `${result.token}`,
    ]) {
      expect(text).not.toContain('brandNewTenantSecret789');
    }
    expect(JSON.stringify(result)).toContain('[redacted svsk_…]');
  });

  it('names the orphaned key id when a created key comes back without its secret', async () => {
    const client = await answering({ id: 'key_orphan', name: 'ci' });
    const err = await protocolFailure(client.createTenantKey({ subaccountId: 'sub_1', name: 'ci' }));
    expect(err.details).toEqual({ keyId: 'key_orphan' });
  });

  it('converts numeric amounts through their decimal text and rejects fractions', async () => {
    const ok = await answering({ balanceMicroUsd: 1500000, currency: 'USD' });
    expect((await ok.getWallet({ subaccountId: 'sub_1' })).wallet).toMatchObject({
      balanceMicroUsd: '1500000',
      balanceKnown: true,
    });
    await server?.close();
    const fraction = await answering({ balance: 1.5 });
    await protocolFailure(fraction.getWallet({ subaccountId: 'sub_1' }));
    await server?.close();
    const huge = await answering({ balance: 2 ** 60 });
    await protocolFailure(huge.getWallet({ subaccountId: 'sub_1' }));
  });

  it('keeps big string amounts exact and says when a wallet shows no balance', async () => {
    const client = await answering({ paidBalanceMicroUsd: '123456789012345678901234567890' });
    expect((await client.getWallet({ subaccountId: 'sub_1' })).wallet.balanceMicroUsd).toBe(
      '123456789012345678901234567890',
    );
    await server?.close();
    const unknown = await answering({ owner: 'sub_1' });
    expect((await unknown.getWallet({ subaccountId: 'sub_1' })).wallet.balanceKnown).toBe(false);
  });

  it.each([
    [
      'a list of key/value',
      {
        variables: [
          { key: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
      },
    ],
    ['a map', { A: '1', B: '2' }],
    ['a wrapped map', { vars: { A: '1', B: '2' } }],
    [
      'a bare list',
      [
        { key: 'A', value: '1' },
        { key: 'B', value: '2' },
      ],
    ],
  ])('reads env vars given as %s', async (_name, data) => {
    server = await startScriptedServer((_req, res) => sendData(res, 200, data));
    const client = createPlatformClient({ baseUrl: server.apiBase, personalToken: 'sv_humanToken' });
    const { vars } = await client.getEnvVars({ auth: { kind: 'personal' }, projectId: 'proj_1' });
    expect(vars).toEqual({ A: '1', B: '2' });
  });

  it('reads webhooks and deliveries with renamed fields and drops an echoed secret', async () => {
    server = await startScriptedServer((req, res) => {
      if (req.url.endsWith('/deliveries')) {
        sendData(res, 200, {
          deliveries: [{ delivery_id: 'dlv_1', event: 'image.pushed', status: 'failed', response_code: 500 }],
        });
      } else {
        sendData(res, 200, {
          webhookId: 'wh_1',
          name: 'ci',
          url: 'https://x.example/h',
          events: ['*'],
          secret: 'whsec_top',
        });
      }
    });
    const client = createPlatformClient({ baseUrl: server.apiBase, personalToken: 'sv_humanToken' });
    const created = await client.createWebhook({
      projectId: 'proj_1',
      label: 'ci',
      url: 'https://x.example/h',
      events: ['*'],
      secret: 'whsec_top',
    });
    expect(created.webhook).toEqual({
      id: 'wh_1',
      label: 'ci',
      url: 'https://x.example/h',
      events: ['*'],
      rawStatus: undefined,
      createdAt: undefined,
    });
    expect(JSON.stringify(created)).not.toContain('whsec_top');
    const { deliveries } = await client.listWebhookDeliveries({ projectId: 'proj_1', webhookId: 'wh_1' });
    expect(deliveries[0]).toMatchObject({
      deliveryId: 'dlv_1',
      event: 'image.pushed',
      rawStatus: 'failed',
      responseCode: 500,
    });
  });
});
