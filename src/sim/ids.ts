import { createHash, randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += BASE62[randomInt(BASE62.length)];
  return out;
}

/**
 * Opaque prefixed id. The length varies on purpose (14-26 chars after the prefix): the contract tells clients
 * never to assume a length, and a fixed length would let such an assumption pass unnoticed.
 */
export function newId(prefix: string): string {
  return `${prefix}${randomBase62(randomInt(14, 27))}`;
}

/** A fresh secret token (`svsk_` / `svpk_` + 40 base62 chars); only its hash is ever stored. */
export function newToken(prefix: 'svsk_' | 'svpk_'): string {
  return `${prefix}${randomBase62(40)}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
