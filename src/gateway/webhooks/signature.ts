import { createHmac, timingSafeEqual } from 'node:crypto';
import { GatewayErrorCode } from '../http/errors.js';

/**
 * Registry delivery signatures (contract, "Delivery headers and signature"): `sha256=` and 64 hexadecimal
 * characters (either case: the contract does not say lower-case), an HMAC-SHA256 of the exact raw body bytes. The
 * header is checked against the exact
 * pattern before anything is computed, and digests are compared in constant time after a length check.
 */
const SIGNATURE_PATTERN = /^sha256=[0-9a-fA-F]{64}$/;
const HMAC_BYTES = 32;

export type SignatureFailure =
  | typeof GatewayErrorCode.SIGNATURE_MISSING
  | typeof GatewayErrorCode.SIGNATURE_MALFORMED
  | typeof GatewayErrorCode.SIGNATURE_MISMATCH;
export type SignatureCheck = { ok: true; index: number } | { ok: false; code: SignatureFailure };

export function computeSignature(secret: string, rawBody: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** The digest bytes of a well-formed header, or the failure code. */
export function parseSignatureHeader(
  header: string | string[] | undefined,
): { ok: true; digest: Buffer } | { ok: false; code: SignatureFailure } {
  if (header === undefined || header === '') return { ok: false, code: GatewayErrorCode.SIGNATURE_MISSING };
  if (typeof header !== 'string' || !SIGNATURE_PATTERN.test(header))
    return { ok: false, code: GatewayErrorCode.SIGNATURE_MALFORMED };
  return { ok: true, digest: Buffer.from(header.slice('sha256='.length), 'hex') };
}

/**
 * Checks the header against every accepted secret (current and, during a replacement, previous); `index` names the one
 * that matched.
 */
export function verifySignature(
  rawBody: Buffer,
  header: string | string[] | undefined,
  secrets: readonly string[],
): SignatureCheck {
  const parsed = parseSignatureHeader(header);
  if (!parsed.ok) return parsed;
  let matchedIndex = -1;
  secrets.forEach((secret, index) => {
    const expected = createHmac('sha256', secret).update(rawBody).digest();
    if (
      expected.length === HMAC_BYTES &&
      parsed.digest.length === expected.length &&
      timingSafeEqual(expected, parsed.digest) &&
      matchedIndex < 0
    ) {
      matchedIndex = index;
    }
  });
  return matchedIndex >= 0
    ? { ok: true, index: matchedIndex }
    : { ok: false, code: GatewayErrorCode.SIGNATURE_MISMATCH };
}
