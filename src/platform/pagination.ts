import { isObject, type JsonObject } from './envelope.js';
import { PlatformErrorCode, PlatformPaginationError } from './errors.js';
import { asText, pick, protocolError, type ParseContext } from './normalize.js';

// List shapes and pagination are "not shown". A page is a bare array or an object holding the items under a
// well-known key; the next page is named by a cursor, a `next` URL, or `hasMore` plus the last item's id. Each of
// these can sit in the payload, beside it in the envelope, or in `meta`.

const ITEM_KEYS = ['items', 'data', 'results'] as const;
// Where a next-page cursor may sit, and the query parameter it goes back in. We send `cursor=` unless the platform
// speaks the page-token dialect (`nextPageToken` answers `pageToken=`), mirroring the name it used.
const CURSOR_PATHS: readonly { path: readonly string[]; param: string }[] = [
  { path: ['nextCursor'], param: 'cursor' },
  { path: ['next_cursor'], param: 'cursor' },
  { path: ['nextPageToken'], param: 'pageToken' },
  { path: ['next_page_token'], param: 'page_token' },
  { path: ['next'], param: 'cursor' },
  { path: ['page', 'next'], param: 'cursor' },
  { path: ['page', 'nextCursor'], param: 'cursor' },
  { path: ['page', 'next_cursor'], param: 'cursor' },
  { path: ['page', 'nextPageToken'], param: 'pageToken' },
  { path: ['page', 'next_page_token'], param: 'page_token' },
  { path: ['pagination', 'nextCursor'], param: 'cursor' },
  { path: ['pagination', 'next_cursor'], param: 'cursor' },
  { path: ['pagination', 'next'], param: 'cursor' },
  { path: ['pagination', 'nextPageToken'], param: 'pageToken' },
  { path: ['links', 'next'], param: 'cursor' },
  { path: ['_links', 'next'], param: 'cursor' },
  // Last: a bare `cursor` could be an echo of the current one; the loop guard catches that case.
  { path: ['cursor'], param: 'cursor' },
  { path: ['page', 'cursor'], param: 'cursor' },
  { path: ['pagination', 'cursor'], param: 'cursor' },
];
const HAS_MORE_PATHS = [
  ['hasMore'],
  ['has_more'],
  ['page', 'hasMore'],
  ['page', 'has_more'],
  ['pagination', 'hasMore'],
  ['pagination', 'has_more'],
] as const;

export type NextPage = { kind: 'cursor'; cursor: string; param: string } | { kind: 'url'; url: URL } | undefined;

export interface ListPage {
  items: JsonObject[];
  next: NextPage;
}

function at(obj: JsonObject, path: readonly string[]): unknown {
  let current: unknown = obj;
  for (const key of path) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function firstAt(sources: JsonObject[], paths: readonly (readonly string[])[]): unknown {
  for (const source of sources) {
    for (const path of paths) {
      const value = at(source, path);
      if (present(value)) return value;
    }
  }
  return undefined;
}

function findCursor(sources: JsonObject[]): { value: unknown; param: string } | undefined {
  for (const source of sources) {
    for (const { path, param } of CURSOR_PATHS) {
      const value = at(source, path);
      if (present(value)) return { value, param };
    }
  }
  return undefined;
}

function itemsOf(payload: unknown, resourceKeys: readonly string[], ctx: ParseContext): unknown[] {
  if (Array.isArray(payload)) return payload;
  if (payload === undefined || payload === null) return [];
  if (!isObject(payload)) throw protocolError(ctx, 'the list response is neither an array nor an object');
  const named = pick(payload, [...ITEM_KEYS, ...resourceKeys]);
  if (Array.isArray(named)) return named;
  const arrays = Object.values(payload).filter(Array.isArray);
  if (arrays.length === 1) return arrays[0] as unknown[];
  throw protocolError(ctx, 'cannot find the list of items in the response');
}

function nextFrom(found: { value: unknown; param: string } | undefined, current: URL): NextPage {
  if (!found) return undefined;
  const value = isObject(found.value) ? pick(found.value, ['href', 'url', 'cursor']) : found.value;
  const text = asText(value);
  if (text === undefined || text === '') return undefined;
  // A URL (absolute, or relative to the page that gave it) is followed; anything else is an opaque cursor.
  if (/^https?:\/\//i.test(text) || text.startsWith('/') || text.startsWith('?')) {
    return { kind: 'url', url: new URL(text, current) };
  }
  return { kind: 'cursor', cursor: text, param: found.param };
}

export function readListPage(
  payload: unknown,
  body: JsonObject | undefined,
  current: URL,
  resourceKeys: readonly string[],
  idOf: (item: JsonObject) => string | undefined,
  ctx: ParseContext,
): ListPage {
  const raw = itemsOf(payload, resourceKeys, ctx);
  const items = raw.filter(isObject);
  if (items.length !== raw.length) throw protocolError(ctx, 'a list item is not an object');
  const sources = [payload, body, body?.meta].filter(isObject);
  const hasMore = firstAt(sources, HAS_MORE_PATHS);
  if (hasMore === false) return { items, next: undefined };
  const next = nextFrom(findCursor(sources), current);
  if (next || hasMore !== true) return { items, next };
  const last = items.at(-1);
  const lastId = last ? idOf(last) : undefined;
  if (lastId === undefined) throw protocolError(ctx, 'hasMore is true but there is no cursor and no last item id');
  return { items, next: { kind: 'cursor', cursor: lastId, param: 'cursor' } };
}

/** Stops a pagination that would never end: the same cursor or URL twice, or more than `maxPages` pages. */
export class PageGuard {
  readonly #seen = new Set<string>();
  #pages = 0;

  constructor(
    private readonly maxPages: number,
    private readonly ctx: ParseContext,
  ) {}

  /** Called once a page has been read and names a next one, before that next page is fetched. */
  beforeNext(next: NonNullable<NextPage>, requestId: string | undefined): void {
    this.#pages += 1;
    const fail = (
      code: typeof PlatformErrorCode.PAGINATION_LIMIT | typeof PlatformErrorCode.PAGINATION_LOOP,
      why: string,
    ) =>
      new PlatformPaginationError({
        code,
        message: `${this.ctx.operation} (${this.ctx.method} ${this.ctx.path}): ${why}`,
        method: this.ctx.method,
        path: this.ctx.path,
        requestId,
      });
    if (this.#pages >= this.maxPages) {
      throw fail(
        PlatformErrorCode.PAGINATION_LIMIT,
        `more than ${this.maxPages} pages; raise maxPages if this is expected`,
      );
    }
    const key = next.kind === 'cursor' ? `cursor:${next.cursor}` : `url:${next.url.href}`;
    if (this.#seen.has(key)) {
      throw fail(
        PlatformErrorCode.PAGINATION_LOOP,
        `the platform named the same next page (${next.kind}) twice; stopping`,
      );
    }
    this.#seen.add(key);
  }
}
