import { PlatformErrorCode, PlatformInputError } from './errors.js';

// The contract does not show length or format limits for idempotency keys. We stay inside what every HTTP stack
// carries unchanged in a header: visible ASCII, no spaces (fetch trims header values, which would make the header
// and the body `idempotencyKey` differ), at most 255 characters.
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

export function assertIdempotencyKey(key: unknown, operation: string): string {
  const problem =
    typeof key !== 'string'
      ? 'must be a string'
      : key.length === 0
        ? 'must not be empty'
        : key.length > MAX_IDEMPOTENCY_KEY_LENGTH
          ? `must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (got ${key.length})`
          : !VISIBLE_ASCII.test(key)
            ? 'must be printable ASCII without spaces or control characters'
            : undefined;
  if (problem !== undefined) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_IDEMPOTENCY_KEY,
      message: `${operation}: idempotency key ${problem}`,
    });
  }
  return key as string;
}

function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** Ids are opaque: never parsed, only checked to be a usable, non-empty path segment or header value. */
export function assertId(value: unknown, field: string, operation: string): string {
  if (typeof value !== 'string' || value.length === 0 || hasControlCharacter(value)) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: `${operation}: ${field} must be a non-empty string without control characters`,
    });
  }
  return value;
}

export function assertNonEmpty(value: unknown, field: string, operation: string): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: `${operation}: ${field} must be a non-empty string`,
    });
  }
  return value;
}

const POSITIVE_INTEGER = /^[1-9][0-9]*$/;

/** Amounts are positive integer strings in micro-USD (contract, "Transfer rules"); never a JS number. */
export function assertAmountMicroUsd(value: unknown, operation: string): string {
  if (typeof value !== 'string' || !POSITIVE_INTEGER.test(value)) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: `${operation}: amountMicroUsd must be a string of a positive integer (micro-USD), e.g. "1500000"`,
    });
  }
  return value;
}
