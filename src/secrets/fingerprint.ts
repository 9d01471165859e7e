/**
 * A short fingerprint of an API token, safe to store, log, show in the Web UI and return from
 * activities: `sha256:` + the first 16 hex digits (64 bits) of SHA-256(token).
 *
 * Why an unsalted hash is enough here: platform tokens are long random strings, so the fingerprint
 * cannot be reversed by guessing (unlike a password hash, there is no small space to search), and
 * 64 bits tell an operator's tokens apart without collisions in practice. It identifies a token; it
 * never authenticates anything, so it is not a substitute for the sealed token.
 */
import { createHash } from 'node:crypto';

export const FINGERPRINT_PATTERN = /^sha256:[0-9a-f]{16}$/;

export function fingerprintToken(token: string): string {
  return `sha256:${createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16)}`;
}
