/**
 * Master keys for AES-256-GCM, from the config value `SECRETS_KEYS`:
 *
 *   SECRETS_KEYS=2025-06:<base64 32 bytes>,2025-01:<base64 32 bytes>
 *
 * The FIRST entry encrypts; every entry decrypts. To rotate: put a new key first, keep the old ones
 * until every stored secret has been resealed (`vault.reseal`), then drop them.
 *
 * Key material never appears in errors, JSON or `util.inspect` output: the bytes live in a private
 * field, and error messages name entries by position and id only.
 */
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { MasterKeyConfigError } from './errors.js';

import { KEY_ID_PATTERN, MASTER_KEY_BYTES, readMasterKeyEntries } from '../domain/master-key-entries.js';

export { KEY_ID_PATTERN, MASTER_KEY_BYTES };

export class MasterKey {
  readonly id: string;
  readonly #material: Buffer;

  constructor(id: string, material: Uint8Array) {
    if (!KEY_ID_PATTERN.test(id)) throw new MasterKeyConfigError([`key id must match ${KEY_ID_PATTERN.source}`]);
    if (material.length !== MASTER_KEY_BYTES) {
      throw new MasterKeyConfigError([`key "${id}" must be ${MASTER_KEY_BYTES} bytes, got ${material.length}`]);
    }
    this.id = id;
    this.#material = Buffer.from(material);
  }

  /** The raw key, for node:crypto only. Never log or store it. */
  material(): Buffer {
    return this.#material;
  }

  toJSON(): { id: string } {
    return { id: this.id };
  }

  [inspect.custom](): string {
    return `MasterKey(${this.id})`;
  }
}

export interface MasterKeyRing {
  /** Encrypts new values: the first entry of `SECRETS_KEYS`. */
  readonly current: MasterKey;
  /** Every configured key by id, the current one included. */
  readonly byId: ReadonlyMap<string, MasterKey>;
}

export type MasterKeysParseResult =
  { readonly ok: true; readonly keys: MasterKeyRing } | { readonly ok: false; readonly problems: readonly string[] };

/**
 * Parses `SECRETS_KEYS`, collecting every problem (for a zod `superRefine`, or any caller that reports all at once).
 */
export function safeParseMasterKeys(value: string): MasterKeysParseResult {
  const { keys, problems } = readMasterKeyEntries(value, (id, material) => new MasterKey(id, material));
  const [current] = keys;
  if (problems.length > 0 || current === undefined) return { ok: false, problems };
  return { ok: true, keys: { current, byId: new Map(keys.map((key) => [key.id, key])) } };
}

/** Parses `SECRETS_KEYS` or throws a `MasterKeyConfigError` listing every problem. */
export function parseMasterKeys(value: string): MasterKeyRing {
  const result = safeParseMasterKeys(value);
  if (!result.ok) throw new MasterKeyConfigError(result.problems);
  return result.keys;
}

/** Builds a ring from keys already in memory (tests, tools); the first one encrypts. */
export function createMasterKeyRing(keys: readonly MasterKey[]): MasterKeyRing {
  const [current] = keys;
  if (current === undefined) throw new MasterKeyConfigError(['at least one master key is required']);
  const byId = new Map<string, MasterKey>();
  for (const key of keys) {
    if (byId.has(key.id)) throw new MasterKeyConfigError([`key id "${key.id}" is used twice`]);
    byId.set(key.id, key);
  }
  return { current, byId };
}

/** A fresh `id:base64` entry for `SECRETS_KEYS` (docs, dev stack, `tenantctl`). */
export function generateMasterKey(id: string): string {
  if (!KEY_ID_PATTERN.test(id)) throw new MasterKeyConfigError([`key id must match ${KEY_ID_PATTERN.source}`]);
  return `${id}:${randomBytes(MASTER_KEY_BYTES).toString('base64')}`;
}
