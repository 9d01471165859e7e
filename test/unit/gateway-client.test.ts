import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayCallError } from '../../src/api-client/gateway-client.js';
import { openGateway } from '../../src/cli/gateway-access.js';

/** tenantctl's gateway client sends with node:http, not fetch (issue 49): what it sends and what it answers. */
const NO_STACK = { DATA_DIR: '/nonexistent-stack-dir' };

describe('the gateway client over node:http', () => {
  let server: Server;
  let base: string;
  const seen: Array<{
    method: string;
    url: string;
    auth: string | undefined;
    length: string | undefined;
    body: string;
  }> = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        seen.push({
          method: req.method!,
          url: req.url!,
          auth: req.headers.authorization,
          length: req.headers['content-length'],
          body,
        });
        res.setHeader('content-type', 'application/json');
        res.setHeader('x-answer', 'yes');
        if (req.url!.startsWith('/v1/missing')) {
          res.statusCode = 404;
          res.end(JSON.stringify({ error: { code: 'TENANT_NOT_FOUND', message: 'no tenant ré' } }));
        } else res.end(JSON.stringify({ data: { echo: body ? JSON.parse(body) : null, word: 'café' } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends the token, the query and a JSON body with its length; answers data, status and headers', async () => {
    const gateway = await openGateway('tok', { ...NO_STACK, TENANTCTL_GATEWAY_URL: `${base}/` });
    expect(await gateway.get('/v1/things', { limit: 5, after: undefined })).toEqual({ echo: null, word: 'café' });
    const answer = await gateway.call('POST', '/v1/things', {
      body: { name: 'Zoë' },
      headers: { 'idempotency-key': 'k' },
    });
    expect(answer.status).toBe(200);
    expect(answer.data).toEqual({ echo: { name: 'Zoë' }, word: 'café' });
    expect(answer.headers.get('x-answer')).toBe('yes');
    expect(seen.slice(-2)).toEqual([
      { method: 'GET', url: '/v1/things?limit=5', auth: 'Bearer tok', length: undefined, body: '' },
      {
        method: 'POST',
        url: '/v1/things',
        auth: 'Bearer tok',
        length: String(Buffer.byteLength('{"name":"Zoë"}')),
        body: '{"name":"Zoë"}',
      },
    ]);
  });

  it("throws the gateway's error by its code", async () => {
    const gateway = await openGateway('tok', { ...NO_STACK, TENANTCTL_GATEWAY_URL: base });
    const error = await gateway.get('/v1/missing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayCallError);
    expect(error).toMatchObject({ status: 404, code: 'TENANT_NOT_FOUND', message: 'no tenant ré' });
  });

  it('names a gateway that does not answer', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await (
      await openGateway('tok', { ...NO_STACK, TENANTCTL_GATEWAY_URL: url })
    )
      .get('/v1/tenants')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'GATEWAY_UNREACHABLE' });
    expect((error as Error).message).toContain(`the gateway at ${url} did not answer`);
  });
});
