import { afterEach, describe, expect, it } from 'vitest';
import { createPlatformClient, PlatformPaginationError, PlatformProtocolError } from '../../src/platform/index.js';
import {
  nextRequestId,
  sendData,
  sendJson,
  startScriptedServer,
  type RecordedRequest,
  type ScriptedServer,
} from '../harness/scripted-server.js';

const PLATFORM_KEY = 'svpk_parentSecretValue123';
const tenant = (n: number) => ({ id: `sub_${n}`, name: `Tenant ${n}`, externalRef: `ext-${n}`, status: 'active' });

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function listWith(
  handler: (req: RecordedRequest, url: URL) => unknown,
  options: { maxPages?: number; pageSize?: number } = {},
) {
  server = await startScriptedServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const answer = handler(req, url);
    if (answer !== undefined) sendJson(res, 200, answer);
  });
  const client = createPlatformClient({ baseUrl: server.apiBase, platformKey: PLATFORM_KEY, ...options });
  return client.listSubaccounts();
}

const envelope = (data: unknown, extra: Record<string, unknown> = {}) => ({
  data,
  meta: { requestId: nextRequestId() },
  ...extra,
});

describe('platform client list tolerance', () => {
  it.each([
    ['a bare array', [tenant(1), tenant(2)]],
    ['items', { items: [tenant(1), tenant(2)] }],
    ['data', { data: [tenant(1), tenant(2)] }],
    ['results', { results: [tenant(1), tenant(2)] }],
    ['a resource-named key', { subaccounts: [tenant(1), tenant(2)], total: 2 }],
    ['a single unknown array key', { tenantsOfParent: [tenant(1), tenant(2)] }],
  ])('reads a list given as %s', async (_name, data) => {
    const result = await listWith(() => envelope(data));
    expect(result.subaccounts.map((s) => s.id)).toEqual(['sub_1', 'sub_2']);
    expect(result.requestId).toMatch(/^req_/);
  });

  it('reads a list whose payload is not under data (named after the resource)', async () => {
    const result = await listWith(() => ({ subaccounts: [tenant(1)], meta: { requestId: 'req_x' } }));
    expect(result.subaccounts).toHaveLength(1);
    expect(result.requestId).toBe('req_x');
  });

  it('treats an empty data as an empty list', async () => {
    const result = await listWith(() => envelope(null));
    expect(result.subaccounts).toEqual([]);
  });

  const pages = [[tenant(1), tenant(2)], [tenant(3)], [tenant(4), tenant(5)]];
  const pageIndex = (token: string | null) => (token === null ? 0 : Number(token.replace('tok', '')));
  const nextToken = (i: number) => (i + 1 < pages.length ? `tok${i + 1}` : null);

  it.each([
    ['nextCursor', 'cursor', (items: unknown, next: string | null) => envelope({ items, nextCursor: next })],
    ['next_cursor', 'cursor', (items: unknown, next: string | null) => envelope({ items, next_cursor: next })],
    ['next', 'cursor', (items: unknown, next: string | null) => envelope({ items, next })],
    ['page.next', 'cursor', (items: unknown, next: string | null) => envelope({ items, page: { next } })],
    [
      'pagination.nextCursor',
      'cursor',
      (items: unknown, next: string | null) => envelope({ results: items, pagination: { nextCursor: next } }),
    ],
    [
      'nextCursor beside data',
      'cursor',
      (items: unknown, next: string | null) => envelope(items, { nextCursor: next }),
    ],
    [
      'meta.nextCursor',
      'cursor',
      (items: unknown, next: string | null) => ({
        data: items,
        meta: { requestId: nextRequestId(), nextCursor: next },
      }),
    ],
    [
      'page.nextPageToken beside data',
      'pageToken',
      (items: unknown, next: string | null) => envelope(items, { page: { nextPageToken: next } }),
    ],
    ['links.next as a token', 'cursor', (items: unknown, next: string | null) => envelope({ items, links: { next } })],
  ])('fetches every page with a cursor in %s', async (_name, param, shape) => {
    const result = await listWith((_req, url) => {
      const i = pageIndex(url.searchParams.get(param));
      return shape(pages[i], nextToken(i));
    });
    expect(result.subaccounts.map((s) => s.id)).toEqual(['sub_1', 'sub_2', 'sub_3', 'sub_4', 'sub_5']);
    expect(result.requestIds).toHaveLength(3);
    expect(server?.requests.map((r) => new URL(r.url, 'http://x').searchParams.get(param))).toEqual([
      null,
      'tok1',
      'tok2',
    ]);
  });

  it('follows links.next given as an absolute URL on the same host', async () => {
    const result = await listWith((_req, url) => {
      const i = Number(url.searchParams.get('page') ?? '0');
      const next = i + 1 < pages.length ? `${server?.apiBase}/subaccounts?page=${i + 1}` : null;
      return envelope({ items: pages[i], links: { next } });
    });
    expect(result.subaccounts).toHaveLength(5);
    expect(server?.requests.map((r) => r.url)).toEqual([
      '/api/v1/subaccounts',
      '/api/v1/subaccounts?page=1',
      '/api/v1/subaccounts?page=2',
    ]);
    expect(server?.requests.every((r) => r.headers.authorization === `Bearer ${PLATFORM_KEY}`)).toBe(true);
  });

  it('follows a relative next URL', async () => {
    const result = await listWith((_req, url) => {
      const i = Number(url.searchParams.get('p') ?? '0');
      return envelope({ items: pages[i], next: i + 1 < pages.length ? `/api/v1/subaccounts?p=${i + 1}` : null });
    });
    expect(result.subaccounts).toHaveLength(5);
  });

  it('refuses to follow a next URL on another host (credentials stay home)', async () => {
    const err = await listWith(() =>
      envelope({ items: [tenant(1)], links: { next: 'https://evil.example/api/v1/subaccounts?p=2' } }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformProtocolError);
    expect(server?.requests).toHaveLength(1);
  });

  it('pages by the last id when the platform only says hasMore', async () => {
    const all = [tenant(1), tenant(2), tenant(3)];
    const result = await listWith((_req, url) => {
      const after = url.searchParams.get('cursor');
      const start = after === null ? 0 : all.findIndex((t) => t.id === after) + 1;
      const slice = all.slice(start, start + 2);
      return envelope({ items: slice, hasMore: start + 2 < all.length });
    });
    expect(result.subaccounts.map((s) => s.id)).toEqual(['sub_1', 'sub_2', 'sub_3']);
  });

  it('stops on hasMore: false even when a cursor is present', async () => {
    const result = await listWith(() => envelope({ items: [tenant(1)], nextCursor: 'tok1', hasMore: false }));
    expect(result.subaccounts).toHaveLength(1);
    expect(server?.requests).toHaveLength(1);
  });

  it('stops with a loop error when the platform repeats a cursor', async () => {
    const err = await listWith(() => envelope({ items: [tenant(1)], nextCursor: 'same' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformPaginationError);
    expect((err as PlatformPaginationError).code).toBe('PAGINATION_LOOP');
    expect((err as PlatformPaginationError).requestId).toMatch(/^req_/);
    expect(server?.requests).toHaveLength(2);
  });

  it('stops at maxPages', async () => {
    let n = 0;
    const err = await listWith(() => envelope({ items: [tenant(n)], nextCursor: `tok${++n}` }), { maxPages: 3 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PlatformPaginationError);
    expect((err as PlatformPaginationError).code).toBe('PAGINATION_LIMIT');
    expect(server?.requests).toHaveLength(3);
  });

  it('sends limit= when a page size is configured', async () => {
    await listWith(() => envelope([tenant(1)]), { pageSize: 50 });
    expect(server?.requests[0]?.url).toBe('/api/v1/subaccounts?limit=50');
  });

  it('rejects a list it cannot find', async () => {
    const err = await listWith(() => envelope({ first: [tenant(1)], second: [tenant(2)] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformProtocolError);
  });

  it('reads key lists named keys or apiKeys', async () => {
    server = await startScriptedServer((req, res) => {
      if (req.url.includes('/platform/')) sendData(res, 200, { apiKeys: [{ keyId: 'key_p', status: 'active' }] });
      else sendData(res, 200, { keys: [{ key_id: 'key_t', status: 'enabled' }] });
    });
    const client = createPlatformClient({ baseUrl: server.apiBase, platformKey: PLATFORM_KEY });
    expect((await client.listPlatformKeys()).keys.map((k) => k.id)).toEqual(['key_p']);
    const tenantKeys = await client.listTenantKeys({ subaccountId: 'sub_1' });
    expect(tenantKeys.keys).toMatchObject([{ id: 'key_t', status: 'active', rawStatus: 'enabled' }]);
  });
});
