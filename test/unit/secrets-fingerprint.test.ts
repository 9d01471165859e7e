import { describe, expect, it } from 'vitest';
import { FINGERPRINT_PATTERN, fingerprintToken } from '../../src/secrets/fingerprint.js';

describe('fingerprintToken', () => {
  const token = 'svsk_live_4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e';

  it('is the first 16 hex digits of SHA-256, prefixed', () => {
    // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
    expect(fingerprintToken('abc')).toBe('sha256:ba7816bf8f01cfea');
    expect(fingerprintToken(token)).toMatch(FINGERPRINT_PATTERN);
  });

  it('is stable for a token, differs between tokens, and does not contain the token', () => {
    expect(fingerprintToken(token)).toBe(fingerprintToken(token));
    expect(fingerprintToken(token)).not.toBe(fingerprintToken(`${token}x`));
    expect(fingerprintToken(token)).not.toContain('svsk_');
  });
});
