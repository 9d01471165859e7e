import {
  PlatformAmbiguousError,
  PlatformBusinessStateError,
  PlatformDefiniteError,
  PlatformErrorCode,
  PlatformIdempotencyConflictError,
  PlatformNotFoundError,
  PlatformProtocolError,
  PlatformTenantStateError,
  PlatformTransientError,
  type PlatformError,
  type PlatformErrorInit,
} from './errors.js';
import { safeSnippet } from './secret-token.js';

/** What we know about the request when it fails; `path` never carries the query string. */
export interface RequestContext {
  operation: string;
  method: string;
  path: string;
  /** Reads and HTTP-idempotent calls: a failure after sending is transient, not ambiguous. */
  mutation: boolean;
  /** Repeating the request cannot duplicate its effect (it carries an Idempotency-Key, or is naturally idempotent). */
  replaySafe: boolean;
}

export interface HttpFailure {
  status: number;
  platformCode: string | undefined;
  platformMessage: string | undefined;
  requestId: string | undefined;
  retryAfterMs: number | undefined;
  /** Raw body text, used (redacted, truncated) only when the body had no error message. */
  bodyText: string;
}

function describe(ctx: RequestContext, failure: HttpFailure): string {
  const detail = failure.platformMessage ?? (failure.bodyText ? failure.bodyText : 'no error body');
  const code = failure.platformCode ? ` ${failure.platformCode}` : '';
  const req = failure.requestId ? ` [${failure.requestId}]` : '';
  return (
    `${ctx.operation} (${ctx.method} ${ctx.path}) failed: HTTP ${failure.status}${code}: ` +
    `${safeSnippet(detail)}${req}`
  );
}

// Codes from the contract's Errors table map by code first, whatever the status, so a platform that answers
// INSUFFICIENT_BALANCE with 402 instead of 409 is still understood.
const TENANT_STATE_CODES = new Set(['SUBACCOUNT_SUSPENDED']);
const BUSINESS_STATE_CODES = new Set(['API_KEY_LIMIT_REACHED', 'INSUFFICIENT_BALANCE']);

/**
 * How a platform answers a replayed idempotency key with a conflict instead of the original response is not shown.
 * We read an idempotency code as that conflict when it comes with 409 or names reuse (`..._REUSED`, `..._IN_USE`,
 * `..._CONFLICT`); other idempotency codes (a 400 `..._MISMATCH`) are plain validation failures.
 */
function isIdempotencyConflict(code: string, status: number): boolean {
  if (!/idempot/i.test(code) || code.toUpperCase() === 'IDEMPOTENCY_KEY_REQUIRED') return false;
  return status === 409 || /reuse|in.?use|conflict|replay|already/i.test(code);
}
/** ...except "the first request with this key is still running", which the same key will resolve on retry. */
function isIdempotencyInProgress(code: string): boolean {
  return /progress|processing|concurrent|locked/i.test(code);
}

export function errorFromResponse(ctx: RequestContext, failure: HttpFailure): PlatformError {
  const { status, platformCode } = failure;
  const init: PlatformErrorInit = {
    code: PlatformErrorCode.CLIENT_ERROR,
    message: describe(ctx, failure),
    platformCode,
    status,
    requestId: failure.requestId,
    method: ctx.method,
    path: ctx.path,
    retryAfterMs: failure.retryAfterMs,
  };
  const upper = platformCode?.toUpperCase();

  if (status >= 500) {
    const error = { ...init, code: PlatformErrorCode.SERVER_ERROR };
    return ctx.mutation
      ? new PlatformAmbiguousError({ ...error, replaySafe: ctx.replaySafe })
      : new PlatformTransientError(error);
  }
  if (status < 400) {
    // Redirects are not followed (a 301/302 would turn a POST into a GET); any non-2xx below 400 is a surprise.
    return new PlatformProtocolError({ ...init, message: `${init.message} (unexpected status)` });
  }
  if (status === 429) return new PlatformTransientError({ ...init, code: PlatformErrorCode.RATE_LIMITED });
  if (status === 408) return new PlatformTransientError({ ...init, code: PlatformErrorCode.REQUEST_TIMEOUT });
  if (upper && TENANT_STATE_CODES.has(upper)) {
    return new PlatformTenantStateError({ ...init, code: PlatformErrorCode.SUBACCOUNT_SUSPENDED });
  }
  if (upper && BUSINESS_STATE_CODES.has(upper)) {
    return new PlatformBusinessStateError({ ...init, code: upper as 'API_KEY_LIMIT_REACHED' | 'INSUFFICIENT_BALANCE' });
  }
  if (upper === 'SUBACCOUNT_SCOPE')
    return new PlatformDefiniteError({ ...init, code: PlatformErrorCode.SUBACCOUNT_SCOPE });
  if (upper === 'IDEMPOTENCY_KEY_REQUIRED') {
    return new PlatformDefiniteError({ ...init, code: PlatformErrorCode.IDEMPOTENCY_KEY_REQUIRED });
  }
  if (platformCode && isIdempotencyConflict(platformCode, status)) {
    return isIdempotencyInProgress(platformCode)
      ? new PlatformTransientError({ ...init, code: PlatformErrorCode.CONFLICT })
      : new PlatformIdempotencyConflictError(init);
  }
  switch (status) {
    case 400:
    case 422:
      return new PlatformDefiniteError({ ...init, code: PlatformErrorCode.VALIDATION_FAILED });
    case 401:
      return new PlatformDefiniteError({ ...init, code: PlatformErrorCode.UNAUTHENTICATED });
    case 403:
      return new PlatformDefiniteError({ ...init, code: PlatformErrorCode.FORBIDDEN });
    case 404:
      return new PlatformNotFoundError(init);
    case 409:
      return new PlatformDefiniteError({ ...init, code: PlatformErrorCode.CONFLICT });
    default:
      return new PlatformDefiniteError(init);
  }
}

// Failures that happen before a single byte of the request can reach the server: nothing was sent.
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function errorCodes(err: unknown, depth = 0): string[] {
  if (depth > 5 || typeof err !== 'object' || err === null) return [];
  const codes: string[] = [];
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') codes.push(code);
  if (err instanceof AggregateError)
    codes.push(...err.errors.flatMap((inner: unknown) => errorCodes(inner, depth + 1)));
  codes.push(...errorCodes((err as { cause?: unknown }).cause, depth + 1));
  return codes;
}

export type NetworkFailureKind = 'timeout' | 'cancelled' | 'network';

export function errorFromNetwork(
  ctx: RequestContext,
  err: unknown,
  kind: NetworkFailureKind,
  timeoutMs: number,
  status?: number,
): PlatformError {
  const codes = errorCodes(err);
  const base = { method: ctx.method, path: ctx.path, status, cause: err };
  const where = `${ctx.operation} (${ctx.method} ${ctx.path})`;
  if (kind === 'network' && codes.some((code) => NOT_SENT_CODES.has(code))) {
    return new PlatformTransientError({
      ...base,
      code: PlatformErrorCode.NETWORK_ERROR,
      message: `${where} could not connect (${codes.join(', ')}); the request was not sent`,
    });
  }
  const code =
    kind === 'timeout'
      ? PlatformErrorCode.TIMEOUT
      : kind === 'cancelled'
        ? PlatformErrorCode.CANCELLED
        : PlatformErrorCode.CONNECTION_LOST;
  const what =
    kind === 'timeout'
      ? `timed out after ${timeoutMs} ms`
      : kind === 'cancelled'
        ? 'was cancelled by the caller'
        : `lost its connection (${codes.length > 0 ? codes.join(', ') : safeSnippet(String(err), 120)})`;
  if (!ctx.mutation) {
    return new PlatformTransientError({ ...base, code, message: `${where} ${what}` });
  }
  return new PlatformAmbiguousError({
    ...base,
    code,
    replaySafe: ctx.replaySafe,
    message: `${where} ${what}; the change may or may not have been applied${
      ctx.replaySafe ? ' (retry only with the identical request and idempotency key)' : ' (reconcile before retrying)'
    }`,
  });
}
