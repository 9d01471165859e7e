import { describe, expect, it } from 'vitest';
import { bearerTokenOf, createTokenSet, isLoopback } from '../../src/gateway/http/auth.js';

describe('gateway bearer tokens', () => {
  const tokens = createTokenSet(['first-token-0123456789abcdef0123456789', 'second-token-0123456789abcdef012345678']);

  it('matches any configured token exactly and nothing else', () => {
    expect(tokens.matches('first-token-0123456789abcdef0123456789')).toBe(true);
    expect(tokens.matches('second-token-0123456789abcdef012345678')).toBe(true);
    for (const wrong of [
      '',
      'first-token',
      'first-token-0123456789abcdef012345678',
      'first-token-0123456789abcdef0123456789 ',
      'FIRST-TOKEN-0123456789abcdef0123456789',
    ]) {
      expect(tokens.matches(wrong), wrong).toBe(false);
    }
  });

  it('matches nothing when no token is configured', () => {
    expect(createTokenSet([]).matches('')).toBe(false);
    expect(createTokenSet([]).size).toBe(0);
  });

  it('reads the token of a Bearer header only', () => {
    expect(bearerTokenOf('Bearer abc.def')).toBe('abc.def');
    expect(bearerTokenOf('bearer abc')).toBe('abc');
    expect(bearerTokenOf('Bearer  abc ')).toBe('abc');
    for (const bad of [undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'abc', 'Bearer a b', 'Bearer\u00a0abc'])
      expect(bearerTokenOf(bad), String(bad)).toBeUndefined();
    expect(bearerTokenOf(['Bearer a', 'Bearer b'])).toBeUndefined();
  });

  it('recognizes loopback addresses (IPv4, IPv6 and IPv4-mapped)', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'])
      expect(isLoopback(address), address).toBe(true);
    for (const address of ['10.0.0.1', '::ffff:10.0.0.1', '1127.0.0.1', '', '::2'])
      expect(isLoopback(address), address).toBe(false);
  });
});
