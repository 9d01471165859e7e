import { parseJson, readEnvelope, type JsonObject } from './envelope.js';
import { errorFromNetwork, errorFromResponse, type NetworkFailureKind, type RequestContext } from './http-errors.js';
import { PlatformProtocolError } from './errors.js';
import { parseRetryAfter } from './retry-after.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface TransportOptions {
  baseUrl: URL;
  fetch: typeof fetch;
  timeoutMs: number;
  userAgent: string;
}

export interface TransportRequest {
  operation: string;
  method: HttpMethod;
  /** Relative to the base URL, already filled and encoded. */
  path: string;
  /** An absolute URL to call instead of `path` (a `links.next` page); must be on the base URL's origin. */
  url?: URL;
  query?: Record<string, string | undefined>;
  /** Authorization and tenant-context headers from auth.ts. */
  headers: Record<string, string>;
  body?: unknown;
  idempotencyKey?: string | undefined;
  /**
   * See RequestContext.replaySafe. Explicit per endpoint: an Idempotency-Key header only makes a retry safe where
   * the contract says the platform honours it (tenant create, transfer, lifecycle).
   */
  replaySafe: boolean;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
}

export interface TransportResponse {
  status: number;
  payload: unknown;
  body: JsonObject | undefined;
  requestId: string | undefined;
  /** The URL that answered, for resolving relative `links.next` values. */
  url: URL;
  /** The error context, for protocol errors raised while reading the payload. */
  context: RequestContext;
}

function joinUrl(base: URL, path: string): URL {
  const url = new URL(base.href);
  url.pathname = `${base.pathname.replace(/\/+$/, '')}${path.startsWith('/') ? path : `/${path}`}`;
  return url;
}

/** The path we report in errors: relative to the base when possible, never with the query (cursors, filters). */
function reportedPath(base: URL, url: URL): string {
  const basePath = base.pathname.replace(/\/+$/, '');
  return url.pathname.startsWith(`${basePath}/`) ? url.pathname.slice(basePath.length) : url.pathname;
}

export type Transport = (request: TransportRequest) => Promise<TransportResponse>;

export function createTransport(options: TransportOptions): Transport {
  return async function send(request) {
    const url = request.url ? new URL(request.url.href) : joinUrl(options.baseUrl, request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, value);
    }
    const context: RequestContext = {
      operation: request.operation,
      method: request.method,
      path: reportedPath(options.baseUrl, url),
      mutation: request.method !== 'GET',
      replaySafe: request.replaySafe,
    };
    if (url.origin !== options.baseUrl.origin) {
      // Never send parent or tenant credentials to another host, whatever a response told us to follow.
      throw new PlatformProtocolError({
        message: `${request.operation}: refusing to follow a URL on another origin (${url.origin})`,
        method: request.method,
        path: context.path,
      });
    }

    const headers: Record<string, string> = {
      Accept: 'application/json',
      'User-Agent': options.userAgent,
      ...request.headers,
    };
    if (request.body !== undefined) headers['Content-Type'] = 'application/json';
    if (request.idempotencyKey !== undefined) headers['Idempotency-Key'] = request.idempotencyKey;

    const timeoutMs = request.timeoutMs ?? options.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = request.signal ? AbortSignal.any([timeout, request.signal]) : timeout;
    const failureKind = (): NetworkFailureKind =>
      timeout.aborted ? 'timeout' : request.signal?.aborted ? 'cancelled' : 'network';

    let response: Response;
    let text: string;
    try {
      response = await options.fetch(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal,
        redirect: 'manual',
      });
    } catch (err) {
      throw errorFromNetwork(context, err, failureKind(), timeoutMs);
    }
    try {
      // Read the whole body under the same deadline: a server that sends headers and stalls is still a timeout.
      text = await response.text();
    } catch (err) {
      throw errorFromNetwork(context, err, failureKind(), timeoutMs, response.status);
    }

    const parsed = parseJson(text);
    const envelope = parsed.ok ? readEnvelope(parsed.value) : undefined;
    const requestId = envelope?.requestId ?? response.headers.get('x-request-id') ?? undefined;

    if (response.status < 200 || response.status >= 300) {
      throw errorFromResponse(context, {
        status: response.status,
        platformCode: envelope?.errorCode,
        platformMessage: envelope?.errorMessage,
        requestId,
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
        bodyText: envelope ? '' : text,
      });
    }
    if (!envelope) {
      throw new PlatformProtocolError({
        message:
          `${request.operation} (${request.method} ${context.path}): HTTP ` +
          `${response.status} with a body that is not JSON`,
        status: response.status,
        requestId,
        method: request.method,
        path: context.path,
      });
    }
    return { status: response.status, payload: envelope.payload, body: envelope.body, requestId, url, context };
  };
}
