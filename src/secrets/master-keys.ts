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

export const MASTER_KEY_BYTES = 32;
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

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
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '') {
    return { ok: false, problems: ['it is empty; expected keyId:base64key[,keyId:base64key...]'] };
  }
  const problems: string[] = [];
  const keys: MasterKey[] = [];
  const firstSeenAt = new Map<string, number>();
  entries.forEach((entry, index) => {
    const problem = checkEntry(entry, index + 1, firstSeenAt);
    if (typeof problem === 'string') problems.push(problem);
    else keys.push(problem);
  });
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

// Returns the key, or a problem. The problem text never quotes the key part, and quotes the id only
// once it is known to be a valid id: a reversed entry (`base64:id`) must not leak through the id.
function checkEntry(entry: string, position: number, firstSeenAt: Map<string, number>): MasterKey | string {
  const at = `entry ${position}`;
  if (entry === '') return `${at} is empty (stray comma?)`;
  const colon = entry.indexOf(':');
  if (colon === -1) return `${at} has no ":"; expected keyId:base64key`;
  const id = entry.slice(0, colon);
  const encoded = entry.slice(colon + 1).trim();
  if (!KEY_ID_PATTERN.test(id)) return `${at} has an invalid key id; ids match ${KEY_ID_PATTERN.source}`;
  const seenAt = firstSeenAt.get(id);
  if (seenAt !== undefined) return `${at} repeats key id "${id}" (first used by entry ${seenAt}); ids must be unique`;
  firstSeenAt.set(id, position);
  if (encoded === '') return `${at} (key id "${id}") has an empty key`;
  if (!BASE64_PATTERN.test(encoded)) {
    return `${at} (key id "${id}") is not standard base64 (A-Z a-z 0-9 + / with = padding)`;
  }
  const material = Buffer.from(encoded, 'base64');
  if (material.length !== MASTER_KEY_BYTES) {
    return `${at} (key id "${id}") decodes to ${material.length} bytes; AES-256 needs exactly ${MASTER_KEY_BYTES}`;
  }
  return new MasterKey(id, material);
}
