/**
 * The vault seals small secrets (tenant API tokens) for storage in Postgres.
 *
 * Sealed format, a compact ASCII string that fits a `text` column:
 *
 *   v1.<keyId>.<iv>.<ciphertext>.<tag>      iv: 12 bytes, tag: 16 bytes, all three unpadded base64url
 *
 * Neither key ids ([A-Za-z0-9_-]) nor base64url contain ".", so the split is unambiguous. The GCM
 * additional data is `v1.<keyId>` plus the caller's AAD, which names the owner (see `tenantTokenAad`):
 * a sealed value copied onto another tenant's row, or relabelled with another key id, fails to open.
 */
import { DecryptionError, SealedFormatError } from './errors.js';
import { decrypt, encrypt, IV_BYTES, keyFor, TAG_BYTES, type GcmParts } from './aes-gcm.js';
import type { MasterKeyRing } from './master-keys.js';

export type SealedSecret = `v1.${string}`;

export interface Vault {
  seal(plaintext: string, aad: string): SealedSecret;
  /** Throws `SealedFormatError`, `UnknownKeyIdError` or `DecryptionError`. */
  open(sealed: string, aad: string): string;
  /** Re-encrypts under the current key; a value already under it is returned unchanged (after checking it opens). */
  reseal(sealed: string, aad: string): SealedSecret;
  /** True when the value was sealed under an older key and `reseal` would change it. */
  needsReseal(sealed: string): boolean;
}

const VERSION = 'v1';
const SEALED_PATTERN = /^v1\.([A-Za-z0-9_-]{1,32})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]+)$/;

/** The AAD for a tenant's API token: JSON, so no choice of externalRef can collide with another owner. */
export function tenantTokenAad(owner: { externalRef: string; keyId: string }): string {
  return JSON.stringify(['tenant-token', owner.externalRef, owner.keyId]);
}

export function createVault(keys: MasterKeyRing): Vault {
  const seal = (plaintext: string, aad: string): SealedSecret => {
    const key = keys.current;
    const parts = encrypt(key, Buffer.from(plaintext, 'utf8'), gcmAad(key.id, aad));
    return `${VERSION}.${key.id}.${b64url(parts.iv)}.${b64url(parts.ciphertext)}.${b64url(parts.tag)}`;
  };
  const open = (sealed: string, aad: string): string => {
    const { keyId, parts } = parseSealed(sealed);
    const key = keyFor(keys, keyId);
    const plaintext = decrypt(key, parts, gcmAad(keyId, aad), 'a secret');
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(plaintext);
    } catch (error) {
      throw new DecryptionError(keyId, 'a secret (not UTF-8 text)', error);
    }
  };
  return {
    seal,
    open,
    reseal(sealed, aad) {
      const plaintext = open(sealed, aad);
      return parseSealed(sealed).keyId === keys.current.id ? (sealed as SealedSecret) : seal(plaintext, aad);
    },
    needsReseal(sealed) {
      return parseSealed(sealed).keyId !== keys.current.id;
    },
  };
}

/** The key id a sealed value names, without decrypting it (for rotation reports). */
export function sealedKeyId(sealed: string): string {
  return parseSealed(sealed).keyId;
}

function parseSealed(sealed: string): { keyId: string; parts: GcmParts } {
  const match = SEALED_PATTERN.exec(sealed);
  if (match === null) {
    throw new SealedFormatError(`not a sealed secret: expected ${VERSION}.<keyId>.<iv>.<ciphertext>.<tag>`);
  }
  const [, keyId = '', iv = '', ciphertext = '', tag = ''] = match;
  const parts = {
    iv: fromB64url(iv, 'iv'),
    ciphertext: fromB64url(ciphertext, 'ciphertext'),
    tag: fromB64url(tag, 'tag'),
  };
  if (parts.iv.length !== IV_BYTES) throw new SealedFormatError(`sealed secret iv must be ${IV_BYTES} bytes`);
  if (parts.tag.length !== TAG_BYTES) throw new SealedFormatError(`sealed secret tag must be ${TAG_BYTES} bytes`);
  return { keyId, parts };
}

function gcmAad(keyId: string, aad: string): Buffer {
  return Buffer.from(`${VERSION}.${keyId}\n${aad}`, 'utf8');
}

function b64url(bytes: Buffer): string {
  return bytes.toString('base64url');
}

// Node's decoder ignores stray trailing bits, so two spellings could give the same bytes; accept
// only the canonical one so that any edit to the stored text is detected.
function fromB64url(text: string, field: string): Buffer {
  const bytes = Buffer.from(text, 'base64url');
  if (bytes.toString('base64url') !== text)
    throw new SealedFormatError(`sealed secret ${field} is not canonical base64url`);
  return bytes;
}
