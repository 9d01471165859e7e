/**
 * AES-256-GCM primitives shared by the vault and the payload codec: a random 96-bit IV per message
 * and a 128-bit tag. Random IVs are safe far below 2^32 messages per key; master-key rotation keeps
 * every key well under that.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptionError, UnknownKeyIdError } from './errors.js';
import type { MasterKey, MasterKeyRing } from './master-keys.js';

export const IV_BYTES = 12;
export const TAG_BYTES = 16;
const ALGORITHM = 'aes-256-gcm';

export interface GcmParts {
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
  readonly tag: Buffer;
}

export function encrypt(key: MasterKey, plaintext: Uint8Array, aad: Uint8Array): GcmParts {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key.material(), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, ciphertext, tag: cipher.getAuthTag() };
}

/** `what` names the kind of value in the error ("a secret", "a Temporal payload"). */
export function decrypt(key: MasterKey, parts: GcmParts, aad: Uint8Array, what: string): Buffer {
  try {
    const decipher = createDecipheriv(ALGORITHM, key.material(), parts.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(parts.tag);
    return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]);
  } catch (error) {
    throw new DecryptionError(key.id, what, error);
  }
}

export function keyFor(ring: MasterKeyRing, keyId: string): MasterKey {
  const key = ring.byId.get(keyId);
  if (key === undefined) throw new UnknownKeyIdError(keyId, [...ring.byId.keys()]);
  return key;
}
