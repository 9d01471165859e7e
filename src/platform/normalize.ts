import { isObject, type JsonObject } from './envelope.js';
import { PlatformProtocolError } from './errors.js';

/** Where a payload came from, so a shape problem becomes a PlatformProtocolError with the request id. */
export interface ParseContext {
  operation: string;
  method: string;
  path: string;
  requestId: string | undefined;
}

export function protocolError(
  ctx: ParseContext,
  problem: string,
  details?: Record<string, string>,
): PlatformProtocolError {
  const req = ctx.requestId ? ` [${ctx.requestId}]` : '';
  return new PlatformProtocolError({
    message: `${ctx.operation} (${ctx.method} ${ctx.path}): ${problem}${req}`,
    requestId: ctx.requestId,
    method: ctx.method,
    path: ctx.path,
    details,
  });
}

/** The first of several spellings that is present (not undefined): `id`/`keyId`/`key_id` and so on. */
export function pick(obj: JsonObject, keys: readonly string[]): unknown {
  for (const key of keys) {
    if (obj[key] !== undefined) return obj[key];
  }
  return undefined;
}

export function hasAny(obj: JsonObject, keys: readonly string[]): boolean {
  return keys.some((key) => key in obj);
}

/** Strings stay strings; a finite number becomes its decimal text (ids sent as numbers); anything else is absent. */
export function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** A reference given as a bare id or as an object carrying one (`parent: { id }`). */
export function asRef(value: unknown): string | undefined {
  if (isObject(value)) return asText(pick(value, ['id', 'parentId', 'subaccountId']));
  return asText(value);
}

/** Timestamps should be ISO 8601 strings; epoch seconds or milliseconds are converted rather than dropped. */
export function asTimestamp(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) {
    const date = new Date(value < 1e11 ? value * 1000 : value);
    return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
  }
  if (isObject(value)) return asTimestamp(pick(value, ['at', 'timestamp', 'time']));
  return undefined;
}

const INTEGER_TEXT = /^-?[0-9]+$/;

/**
 * Micro-USD amounts are integer strings. A JSON number is accepted only when it is a safe integer (converted via its
 * decimal text); a fraction or an integer beyond 2^53 has already lost precision, so it is a protocol error.
 */
export function asAmount(value: unknown, field: string, ctx: ParseContext): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && INTEGER_TEXT.test(value.trim())) return BigInt(value.trim()).toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value).toString();
  if (typeof value === 'bigint') return value.toString();
  throw protocolError(ctx, `${field} is not an integer amount in micro-USD`);
}

export function asStringList(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.filter((item): item is string => typeof item === 'string');
}

/** A free-form object (tenant limits) kept as given; its values are not shown by the contract. */
export function asObject(value: unknown): JsonObject | undefined {
  return isObject(value) ? value : undefined;
}

export function requireObject(value: unknown, what: string, ctx: ParseContext): JsonObject {
  if (!isObject(value)) throw protocolError(ctx, `expected ${what} object in the response`);
  return value;
}
