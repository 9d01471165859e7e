import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectAddressOf,
  createOutboundFetch,
  OutboundRefusedError,
  type Resolver,
} from '../../src/infra/outbound/fetch.js';
import { parseAllowHosts } from '../../src/domain/outbound-rule.js';

/**
 * The check where the connection is made. There is no internet here: names resolve through an
 * injected resolver, and the "inward" targets are TCP servers on loopback that count connections,
 * so "refused" means nothing reached them, not that nothing answered.
 */
const post = { method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: '{}' };

function resolverOf(table: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (name: string) => {
    asked.push(name);
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

async function countingServer(): Promise<{ server: Server; port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, connections: () => count };
}

async function httpServer(
  answer: (path: string) => { status: number; headers?: Record<string, string> },
): Promise<{ server: HttpServer; port: number; paths: string[] }> {
  const paths: string[] = [];
  const server = createHttpServer((request, response) => {
    paths.push(request.url ?? '');
    const { status, headers } = answer(request.url ?? '');
    request.resume();
    response.writeHead(status, headers).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, paths };
}

const refusal = async (promise: Promise<unknown>): Promise<unknown> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeDefined();
  // undici wraps what the connector threw: fetch failed, cause OutboundRefusedError.
  return error instanceof OutboundRefusedError ? error : (error as Error).cause;
};

describe('the connect-time check (after DNS)', () => {
  let inward: Awaited<ReturnType<typeof countingServer>>;
  beforeAll(async () => {
    inward = await countingServer();
  });
  afterAll(() => inward.server.close());

  it('refuses a name that resolves to loopback although it passed the URL rule, and connects nowhere', async () => {
    const resolve = resolverOf({ 'rebind.test': ['127.0.0.1'] });
    const outbound = createOutboundFetch({ allowHosts: [], resolve });
    const error = await refusal(outbound(`https://rebind.test:${inward.port}/hook`, post));
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(resolve.asked).toEqual(['rebind.test']);
    expect(inward.connections()).toBe(0);
  });

  it('refuses every inward answer, and a mixed one, whatever the spelling of the address', async () => {
    for (const addresses of [
      ['10.0.0.8'],
      ['169.254.169.254'],
      ['::1'],
      ['::ffff:127.0.0.1'],
      ['fd00:ec2::254'],
      ['fe80::1'],
      ['0.0.0.0'],
      ['93.184.216.34', '127.0.0.1'],
    ]) {
      const resolve = resolverOf({ 'rebind.test': addresses });
      await expect(
        connectAddressOf({ hostname: 'rebind.test', port: 443, protocol: 'https:' }, [], resolve),
        addresses.join(','),
      ).rejects.toBeInstanceOf(OutboundRefusedError);
    }
  });

  it('connects to the address it checked (a public one), and refuses a name that does not resolve', async () => {
    const resolve = resolverOf({ 'hooks.example': ['2606:4700::6810:85e5', '93.184.216.34'] });
    await expect(
      connectAddressOf({ hostname: 'hooks.example', port: 443, protocol: 'https:' }, [], resolve),
    ).resolves.toBe('93.184.216.34');
    await expect(
      connectAddressOf({ hostname: 'nowhere.example', port: 443, protocol: 'https:' }, [], resolve),
    ).rejects.toBeInstanceOf(OutboundRefusedError);
  });

  it('refuses literal inward addresses at connect too (not only at the URL rule)', async () => {
    for (const hostname of ['127.0.0.1', '[::1]', '[::ffff:7f00:1]', '169.254.169.254', '[fe80::1%eth0]'])
      await expect(connectAddressOf({ hostname, port: 443, protocol: 'https:' }, []), hostname).rejects.toBeInstanceOf(
        OutboundRefusedError,
      );
  });

  it('lets an allow-listed host through on its port only, and plain http only to loopback', async () => {
    const resolve = resolverOf({ 'rebind.test': ['127.0.0.1'], 'inside.test': ['10.0.0.8'] });
    const allow = parseAllowHosts(`rebind.test:${inward.port},inside.test`).hosts;
    await expect(
      connectAddressOf({ hostname: 'rebind.test', port: inward.port, protocol: 'https:' }, allow, resolve),
    ).resolves.toBe('127.0.0.1');
    await expect(
      connectAddressOf({ hostname: 'rebind.test', port: inward.port + 1, protocol: 'https:' }, allow, resolve),
    ).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(
      connectAddressOf({ hostname: 'inside.test', port: 443, protocol: 'https:' }, allow, resolve),
    ).resolves.toBe('10.0.0.8');
    await expect(
      connectAddressOf({ hostname: 'inside.test', port: 80, protocol: 'http:' }, allow, resolve),
    ).rejects.toBeInstanceOf(OutboundRefusedError);
    // The positive control for the first test: listed, the same name does reach the server.
    const outbound = createOutboundFetch({ allowHosts: allow, resolve });
    const before = inward.connections();
    await outbound(`https://rebind.test:${inward.port}/hook`, post).catch(() => undefined);
    expect(inward.connections()).toBe(before + 1);
  });

  it('does not follow a redirect: the 3xx is the answer, and its target sees nothing', async () => {
    const target = await httpServer(() => ({ status: 204 }));
    const redirecting = await httpServer(() => ({
      status: 307,
      headers: { location: `http://127.0.0.1:${target.port}/admin` },
    }));
    try {
      const allow = parseAllowHosts(`127.0.0.1:${redirecting.port},127.0.0.1:${target.port}`).hosts;
      const outbound = createOutboundFetch({ allowHosts: allow });
      const response = await outbound(`http://127.0.0.1:${redirecting.port}/hook`, post);
      await response.body?.cancel();
      expect(response.status).toBe(307);
      expect(redirecting.paths).toEqual(['/hook']);
      expect(target.paths).toEqual([]);
    } finally {
      redirecting.server.close();
      target.server.close();
    }
  });

  it('applies the URL rule before any DNS or connection', async () => {
    const resolve = resolverOf({ 'hooks.example': ['93.184.216.34'] });
    const outbound = createOutboundFetch({ allowHosts: [], resolve });
    const before = inward.connections();
    for (const url of [`http://hooks.example/x`, `https://2130706433:${inward.port}/`, `http://[::1]:${inward.port}/`])
      await expect(outbound(url, post), url).rejects.toBeInstanceOf(OutboundRefusedError);
    expect(resolve.asked).toEqual([]);
    expect(inward.connections()).toBe(before);
  });
});
