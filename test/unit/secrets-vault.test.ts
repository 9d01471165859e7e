import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DecryptionError, SealedFormatError, SecretsErrorCode, UnknownKeyIdError } from '../../src/secrets/errors.js';
import { createMasterKeyRing, MasterKey } from '../../src/secrets/master-keys.js';
import { createVault, sealedKeyId, tenantTokenAad } from '../../src/secrets/vault.js';

const token = 'svsk_live_4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e';
const aad = tenantTokenAad({ externalRef: 'cust-42', keyId: 'key_1' });
const newKey = (id: string): MasterKey => new MasterKey(id, randomBytes(32));

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

// Flips one bit in one dot-separated field of a sealed value, re-encoding canonically.
function flip(sealed: string, field: 2 | 3 | 4): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[field] ?? '', 'base64url');
  bytes[0] = (bytes[0] ?? 0) ^ 1;
  parts[field] = bytes.toString('base64url');
  return parts.join('.');
}

describe('vault', () => {
  const k1 = newKey('k1');
  const vault = createVault(createMasterKeyRing([k1]));

  it('round-trips a token and seals in the documented format without the plaintext', () => {
    const sealed = vault.seal(token, aad);
    expect(sealed).toMatch(/^v1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(sealed).not.toContain('svsk_');
    expect(vault.open(sealed, aad)).toBe(token);
  });

  it('uses a fresh IV every time', () => {
    expect(vault.seal(token, aad)).not.toBe(vault.seal(token, aad));
  });

  it.each([
    ['iv', 2],
    ['ciphertext', 3],
    ['tag', 4],
  ] as const)('rejects a tampered %s', (_name, field) => {
    const error = thrown(() => vault.open(flip(vault.seal(token, aad), field), aad));
    expect(error).toBeInstanceOf(DecryptionError);
    expect((error as DecryptionError).code).toBe(SecretsErrorCode.decryptFailed);
  });

  it('rejects a value moved to another owner (different AAD)', () => {
    const sealed = vault.seal(token, aad);
    const otherTenant = tenantTokenAad({ externalRef: 'cust-43', keyId: 'key_1' });
    const otherKey = tenantTokenAad({ externalRef: 'cust-42', keyId: 'key_2' });
    expect(thrown(() => vault.open(sealed, otherTenant))).toBeInstanceOf(DecryptionError);
    expect(thrown(() => vault.open(sealed, otherKey))).toBeInstanceOf(DecryptionError);
  });

  it('rejects a value relabelled with another configured key id', () => {
    const both = createVault(createMasterKeyRing([k1, newKey('k2')]));
    const relabelled = both.seal(token, aad).replace(/^v1\.k1\./, 'v1.k2.');
    const error = thrown(() => both.open(relabelled, aad));
    expect(error).toBeInstanceOf(DecryptionError);
    expect((error as DecryptionError).keyId).toBe('k2');
  });

  it('rejects non-canonical base64url and malformed values as format errors', () => {
    const sealed = vault.seal(token, aad);
    const parts = sealed.split('.');
    const tag = parts[4] ?? '';
    // The last of 22 base64url chars carries 2 unused bits: 'A' -> 'B' would decode to the same tag.
    parts[4] = tag.slice(0, -1) + (tag.endsWith('A') ? 'B' : 'A');
    expect(thrown(() => vault.open(parts.join('.'), aad))).toBeInstanceOf(Error);
    for (const bad of ['', 'v2.k1.a.b.c', 'v1.k1.onlythree.parts', `${sealed}.extra`, 'v1.k1.AAAA.AAAA.AAAA']) {
      expect(thrown(() => vault.open(bad, aad))).toBeInstanceOf(SealedFormatError);
    }
  });

  it('names an unknown key id in the error, and no key bytes', () => {
    const gone = newKey('retired-2024');
    const sealed = createVault(createMasterKeyRing([gone])).seal(token, aad);
    const error = thrown(() => vault.open(sealed, aad));
    expect(error).toBeInstanceOf(UnknownKeyIdError);
    const { message, keyId, name } = error as UnknownKeyIdError;
    expect(name).toBe('UnknownKeyIdError');
    expect(keyId).toBe('retired-2024');
    expect(message).toContain('"retired-2024"');
    for (const material of [gone.material(), k1.material()]) {
      expect(message).not.toContain(material.toString('base64'));
      expect(message).not.toContain(material.toString('hex'));
    }
    expect(message).not.toContain(token);
  });

  it('after rotation: old values still open, new values use the first key, reseal moves them', () => {
    const before = vault.seal(token, aad);
    const k2 = newKey('k2');
    const rotated = createVault(createMasterKeyRing([k2, k1]));
    expect(rotated.open(before, aad)).toBe(token);
    expect(sealedKeyId(rotated.seal(token, aad))).toBe('k2');
    expect(rotated.needsReseal(before)).toBe(true);

    const resealed = rotated.reseal(before, aad);
    expect(sealedKeyId(resealed)).toBe('k2');
    expect(rotated.needsReseal(resealed)).toBe(false);
    expect(rotated.reseal(resealed, aad)).toBe(resealed);
    expect(rotated.open(resealed, aad)).toBe(token);
    // Once k1 is dropped, only the resealed value still opens.
    const k1Dropped = createVault(createMasterKeyRing([k2]));
    expect(k1Dropped.open(resealed, aad)).toBe(token);
    expect(thrown(() => k1Dropped.open(before, aad))).toBeInstanceOf(UnknownKeyIdError);
  });

  it('reseal refuses a value bound to another owner', () => {
    const rotated = createVault(createMasterKeyRing([newKey('k2'), k1]));
    const other = tenantTokenAad({ externalRef: 'cust-43', keyId: 'key_1' });
    expect(thrown(() => rotated.reseal(vault.seal(token, aad), other))).toBeInstanceOf(DecryptionError);
  });

  it('builds AADs that no external ref can make collide', () => {
    expect(tenantTokenAad({ externalRef: 'a","b', keyId: 'c' })).not.toBe(
      tenantTokenAad({ externalRef: 'a', keyId: 'b","c' }),
    );
    expect(tenantTokenAad({ externalRef: 'a:key:b', keyId: 'c' })).not.toBe(
      tenantTokenAad({ externalRef: 'a', keyId: 'b:key:c' }),
    );
  });
});
