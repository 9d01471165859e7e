import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError, GatewayErrorCode } from './errors.js';

/**
 * Bearer tokens compared in constant time: both sides are hashed first (equal lengths, and the
 * configured tokens are never compared as text), and every configured token is checked, so the time
 * taken says nothing about which token, or how much of one, matched.
 */
export interface TokenSet {
  readonly size: number;
  matches(presented: string): boolean;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

export function createTokenSet(tokens: readonly string[]): TokenSet {
  const digests = tokens.map(digest);
  return {
    size: digests.length,
    matches(presented) {
      const candidate = digest(presented);
      let matched = false;
      for (const known of digests) matched = timingSafeEqual(known, candidate) || matched;
      return matched;
    },
  };
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
export function bearerTokenOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(header);
  return match?.[1];
}

/** One answer for a missing, malformed or unknown token: nothing tells them apart. */
export function unauthorized(): GatewayError {
  return new GatewayError(401, GatewayErrorCode.UNAUTHORIZED, 'A valid bearer token is required.', {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
}

export function isLoopback(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address);
}
