import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  classifyError,
  createPlatformClient,
  PlatformAmbiguousError,
  PlatformBusinessStateError,
  PlatformDefiniteError,
  PlatformIdempotencyConflictError,
  PlatformNotFoundError,
  PlatformProtocolError,
  PlatformTenantStateError,
  PlatformTransientError,
  type PlatformClient,
} from '../../src/platform/index.js';
import {
  sendError,
  sendJson,
  startScriptedServer,
  type ScriptedHandler,
  type ScriptedServer,
} from '../harness/scripted-server.js';
import { failure } from '../harness/failures.js';

const PLATFORM_KEY = 'svpk_parentSecretValue123';
const TENANT_KEY = 'svsk_tenantSecretValue456';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientFor(handler: ScriptedHandler, timeoutMs = 2_000): Promise<PlatformClient> {
  server = await startScriptedServer(handler);
  return createPlatformClient({ baseUrl: server.apiBase, platformKey: PLATFORM_KEY, timeoutMs });
}

const transfer = (client: PlatformClient) =>
  client.transfer({ subaccountId: 'sub_1', amountMicroUsd: '1000', idempotencyKey: 'transfer-1' });
const getWallet = (client: PlatformClient) => client.getWallet({ subaccountId: 'sub_1' });

describe('platform client error taxonomy', () => {
  it.each([
    [403, 'SUBACCOUNT_SCOPE', PlatformDefiniteError, 'SUBACCOUNT_SCOPE', 'definite'],
    [403, 'SUBACCOUNT_SUSPENDED', PlatformTenantStateError, 'SUBACCOUNT_SUSPENDED', 'tenant-state'],
    [409, 'API_KEY_LIMIT_REACHED', PlatformBusinessStateError, 'API_KEY_LIMIT_REACHED', 'business-state'],
    [409, 'INSUFFICIENT_BALANCE', PlatformBusinessStateError, 'INSUFFICIENT_BALANCE', 'business-state'],
    [400, 'IDEMPOTENCY_KEY_REQUIRED', PlatformDefiniteError, 'IDEMPOTENCY_KEY_REQUIRED', 'definite'],
    [404, undefined, PlatformNotFoundError, 'NOT_FOUND', 'definite'],
    [404, 'project_not_found', PlatformNotFoundError, 'NOT_FOUND', 'definite'],
    [401, 'UNAUTHORIZED', PlatformDefiniteError, 'UNAUTHENTICATED', 'definite'],
    [403, 'SOMETHING_NEW', PlatformDefiniteError, 'FORBIDDEN', 'definite'],
    [400, 'VALIDATION_ERROR', PlatformDefiniteError, 'VALIDATION_FAILED', 'definite'],
    [422, 'UNPROCESSABLE', PlatformDefiniteError, 'VALIDATION_FAILED', 'definite'],
    [409, 'SOME_OTHER_CONFLICT', PlatformDefiniteError, 'CONFLICT', 'definite'],
    [409, 'IDEMPOTENCY_KEY_IN_USE', PlatformIdempotencyConflictError, 'IDEMPOTENCY_CONFLICT', 'business-state'],
    [409, 'IDEMPOTENCY_KEY_REUSED', PlatformIdempotencyConflictError, 'IDEMPOTENCY_CONFLICT', 'business-state'],
    [400, 'IDEMPOTENCY_KEY_MISMATCH', PlatformDefiniteError, 'VALIDATION_FAILED', 'definite'],
    [410, 'GONE', PlatformDefiniteError, 'CLIENT_ERROR', 'definite'],
    [408, undefined, PlatformTransientError, 'REQUEST_TIMEOUT', 'transient'],
  ] as const)('maps %i %s to %s (%s)', async (status, code, errorClass, ourCode, classification) => {
    const client = await clientFor((_req, res) => sendError(res, status, code, 'nope'));
    const err = await failure(transfer(client));
    expect(err).toBeInstanceOf(errorClass);
    expect(err.code).toBe(ourCode);
    expect(err.classification).toBe(classification);
    expect(err.platformCode).toBe(code);
    expect(err.status).toBe(status);
    expect(err.requestId).toMatch(/^req_/);
    expect(err.method).toBe('POST');
    expect(err.path).toBe('/subaccounts/sub_1/wallet/transfers');
    expect(err.retryable).toBe(classification === 'transient');
  });

  it('classifies 429 as transient with Retry-After in seconds', async () => {
    const client = await clientFor((_req, res) =>
      sendError(res, 429, 'RATE_LIMITED', 'slow down', { 'retry-after': '7' }),
    );
    const err = await failure(getWallet(client));
    expect(err).toBeInstanceOf(PlatformTransientError);
    expect(err.code).toBe('RATE_LIMITED');
    expect(err.retryAfterMs).toBe(7_000);
  });

  it('classifies 429 as transient with Retry-After as an HTTP date', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    const client = await clientFor((_req, res) => sendError(res, 429, undefined, 'slow down', { 'retry-after': at }));
    const err = await failure(transfer(client));
    expect(err).toBeInstanceOf(PlatformTransientError);
    expect(err.retryAfterMs).toBeGreaterThan(25_000);
    expect(err.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  it('treats a 5xx on a read as transient and on a mutation as ambiguous', async () => {
    const client = await clientFor((_req, res) => sendError(res, 503, 'UNAVAILABLE', 'down'));
    const read = await failure(getWallet(client));
    expect(read).toBeInstanceOf(PlatformTransientError);
    expect(read.code).toBe('SERVER_ERROR');
    const write = await failure(transfer(client));
    expect(write).toBeInstanceOf(PlatformAmbiguousError);
    expect(write.code).toBe('SERVER_ERROR');
    // It carried an Idempotency-Key, so retrying with the same key is safe.
    expect(write.retryable).toBe(true);
  });

  it('marks an ambiguous failure of a create without an idempotency key as not retryable', async () => {
    const client = await clientFor((_req, res) => sendError(res, 502, undefined, 'bad gateway'));
    const err = await failure(client.createTenantKey({ subaccountId: 'sub_1', name: 'k' }));
    expect(err).toBeInstanceOf(PlatformAmbiguousError);
    expect(err.retryable).toBe(false);
    expect(classifyError(err)).toMatchObject({ type: 'SERVER_ERROR', nonRetryable: true, classification: 'ambiguous' });
  });

  it('reads a non-JSON proxy error page by its status', async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>Bad Gateway</body></html>');
    });
    const err = await failure(getWallet(client));
    expect(err).toBeInstanceOf(PlatformTransientError);
    expect(err.message).toContain('Bad Gateway');
  });

  it('does not follow redirects (a POST must never turn into a GET)', async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(302, { location: '/elsewhere' });
      res.end();
    });
    const err = await failure(transfer(client));
    expect(err).toBeInstanceOf(PlatformProtocolError);
    expect(server?.requests).toHaveLength(1);
  });

  it('times out a read as transient and a mutation as ambiguous when the server never answers', async () => {
    const client = await clientFor(() => undefined, 200);
    const read = await failure(getWallet(client));
    expect(read).toBeInstanceOf(PlatformTransientError);
    expect(read.code).toBe('TIMEOUT');
    const write = await failure(transfer(client));
    expect(write).toBeInstanceOf(PlatformAmbiguousError);
    expect(write.code).toBe('TIMEOUT');
    expect(write.retryable).toBe(true);
  });

  it('times out when the server sends headers and then stalls the body', async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":');
    }, 200);
    const err = await failure(transfer(client));
    expect(err).toBeInstanceOf(PlatformAmbiguousError);
    expect(err.code).toBe('TIMEOUT');
  });

  it('reports a socket destroyed after the body was read as ambiguous on POST and transient on GET', async () => {
    const client = await clientFor((_req, res) => res.socket?.destroy());
    const write = await failure(transfer(client));
    expect(write).toBeInstanceOf(PlatformAmbiguousError);
    expect(write.code).toBe('CONNECTION_LOST');
    const read = await failure(getWallet(client));
    expect(read).toBeInstanceOf(PlatformTransientError);
    expect(read.code).toBe('CONNECTION_LOST');
  });

  it('reports connection refused as transient: the request was never sent', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const client = createPlatformClient({ baseUrl: `http://127.0.0.1:${port}/api/v1`, platformKey: PLATFORM_KEY });
    const err = await failure(transfer(client));
    expect(err).toBeInstanceOf(PlatformTransientError);
    expect(err.code).toBe('NETWORK_ERROR');
    expect(err.message).toContain('not sent');
  });

  it('reports cancellation by the caller', async () => {
    const client = await clientFor(() => undefined);
    const controller = new AbortController();
    const pending = client.getWallet({ subaccountId: 'sub_1', signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
  });

  it('never puts a token into messages or serialised errors, even when the platform echoes one', async () => {
    const client = await clientFor((req, res) =>
      sendError(res, 400, 'VALIDATION_ERROR', `bad header ${String(req.headers.authorization)} and ${TENANT_KEY}`),
    );
    const err = await failure(client.listProjects({ auth: { kind: 'tenant-key', token: TENANT_KEY } }));
    const everything = [err.message, JSON.stringify(err), JSON.stringify(classifyError(err)), String(err.stack)].join(
      '\n',
    );
    expect(everything).not.toContain('tenantSecretValue456');
    expect(everything).not.toContain('parentSecretValue123');
    expect(err.message).toContain('[redacted svsk_…]');
  });

  it('truncates long error bodies', async () => {
    const client = await clientFor((_req, res) => sendError(res, 400, 'VALIDATION_ERROR', 'x'.repeat(5_000)));
    const err = await failure(getWallet(client));
    expect(err.message.length).toBeLessThan(600);
  });

  it('falls back to the X-Request-Id header when the body has no meta', async () => {
    const client = await clientFor((_req, res) =>
      sendJson(res, 404, { error: { code: 'X', message: 'gone' } }, { 'x-request-id': 'req_fromHeader' }),
    );
    const err = await failure(getWallet(client));
    expect(err.requestId).toBe('req_fromHeader');
  });

  it('converts any error into plain ApplicationFailure fields', () => {
    expect(classifyError(new Error('boom'))).toMatchObject({
      type: 'UNEXPECTED_ERROR',
      classification: 'ambiguous',
      nonRetryable: false,
    });
  });
});
