import type { ParentCredentials } from './auth.js';
import type { JsonObject } from './envelope.js';
import type { ParseContext } from './normalize.js';
import { PageGuard, readListPage } from './pagination.js';
import { fillPath, type PathName } from './paths.js';
import type { HttpMethod, Transport, TransportRequest, TransportResponse } from './transport.js';

/** Per-call knobs every input accepts: an activity's cancellation signal and a tighter or looser deadline. */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface ClientContext {
  send: Transport;
  credentials: ParentCredentials;
  paths: Record<PathName, string>;
  maxPages: number;
  pageSize: number | undefined;
}

export interface CallSpec {
  operation: PathName;
  method: HttpMethod;
  params?: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
  idempotencyKey?: string | undefined;
  /** Whether repeating this request can never duplicate its effect (reads: irrelevant, pass false). */
  replaySafe: boolean;
  call: CallOptions;
}

function parseContext(operation: string, response: TransportResponse): ParseContext {
  return {
    operation,
    method: response.context.method,
    path: response.context.path,
    requestId: response.requestId,
  };
}

function toRequest(ctx: ClientContext, spec: CallSpec): TransportRequest {
  return {
    operation: spec.operation,
    method: spec.method,
    path: fillPath(ctx.paths[spec.operation], spec.params ?? {}),
    headers: spec.headers,
    body: spec.body,
    idempotencyKey: spec.idempotencyKey,
    replaySafe: spec.replaySafe,
    signal: spec.call.signal,
    timeoutMs: spec.call.timeoutMs,
  };
}

/** One request; `parse` turns the payload into a record (throwing PlatformProtocolError when it cannot). */
export async function request<T>(
  ctx: ClientContext,
  spec: CallSpec,
  parse: (payload: unknown, parseCtx: ParseContext) => T,
): Promise<{ requestId: string | undefined; value: T }> {
  const response = await ctx.send(toRequest(ctx, spec));
  return { requestId: response.requestId, value: parse(response.payload, parseContext(spec.operation, response)) };
}

export interface ListSpec<T> {
  resourceKeys: readonly string[];
  idOf: (item: JsonObject) => string | undefined;
  parse: (item: JsonObject, parseCtx: ParseContext) => T;
}

export interface ListOutcome<T> {
  items: T[];
  /** The last page's request id. */
  requestId: string | undefined;
  /** Every page's request id, in order (undefined where a page had none). */
  requestIds: (string | undefined)[];
}

/**
 * Where the next page of a list is, as plain data a caller can keep between attempts (an activity's heartbeat):
 * a cursor and the query parameter it goes back in, or a same-origin URL.
 */
export type PageToken = { kind: 'cursor'; param: string; cursor: string } | { kind: 'url'; url: string };

/** One page of a list: its items and where the next one is (`null` at the end). The caller decides when to stop. */
export async function listPage<T>(
  ctx: ClientContext,
  spec: CallSpec,
  list: ListSpec<T>,
  page: PageToken | undefined,
): Promise<{ items: T[]; next: PageToken | null; requestId: string | undefined }> {
  const first = toRequest(ctx, spec);
  const baseQuery = ctx.pageSize === undefined ? {} : { limit: String(ctx.pageSize) };
  const request: TransportRequest =
    page === undefined
      ? { ...first, query: baseQuery }
      : page.kind === 'cursor'
        ? { ...first, query: { ...baseQuery, [page.param]: page.cursor } }
        : { ...first, url: new URL(page.url), query: {} };
  const response = await ctx.send(request);
  const parseCtx = parseContext(spec.operation, response);
  const read = readListPage(response.payload, response.body, response.url, list.resourceKeys, list.idOf, parseCtx);
  const next: PageToken | null = !read.next
    ? null
    : read.next.kind === 'cursor'
      ? { kind: 'cursor', param: read.next.param, cursor: read.next.cursor }
      : { kind: 'url', url: read.next.url.href };
  return { items: read.items.map((item) => list.parse(item, parseCtx)), next, requestId: response.requestId };
}

/** Fetches every page (cursor query param, or a same-origin `next` URL) under the page guard. */
export async function listAll<T>(ctx: ClientContext, spec: CallSpec, list: ListSpec<T>): Promise<ListOutcome<T>> {
  const first = toRequest(ctx, spec);
  const baseQuery = ctx.pageSize === undefined ? {} : { limit: String(ctx.pageSize) };
  let next: TransportRequest = { ...first, query: baseQuery };
  let guard: PageGuard | undefined;
  const items: T[] = [];
  const requestIds: (string | undefined)[] = [];
  for (;;) {
    const response = await ctx.send(next);
    const parseCtx = parseContext(spec.operation, response);
    const page = readListPage(response.payload, response.body, response.url, list.resourceKeys, list.idOf, parseCtx);
    items.push(...page.items.map((item) => list.parse(item, parseCtx)));
    requestIds.push(response.requestId);
    if (!page.next) return { items, requestId: response.requestId, requestIds };
    guard ??= new PageGuard(ctx.maxPages, parseCtx);
    guard.beforeNext(page.next, response.requestId);
    next =
      page.next.kind === 'cursor'
        ? { ...first, query: { ...baseQuery, [page.next.param]: page.next.cursor } }
        : { ...first, url: page.next.url, query: {} };
  }
}
