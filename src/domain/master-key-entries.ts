/**
 * The entries of `SECRETS_KEYS` (`keyId:base64(32 bytes)`, comma-separated), checked. src/config checks the
 * setting with it; src/secrets/master-keys.ts turns each entry into a key whose bytes it keeps private.
 * Problem texts never quote the key part.
 */
export const MASTER_KEY_BYTES = 32;
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Every entry made into a key by `make` (given the bytes, nothing else is), and every problem at once. */
export function readMasterKeyEntries<K>(
  value: string,
  make: (id: string, material: Buffer) => K,
): { keys: K[]; problems: string[] } {
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '') {
    return { keys: [], problems: ['it is empty; expected keyId:base64key[,keyId:base64key...]'] };
  }
  const problems: string[] = [];
  const keys: K[] = [];
  const firstSeenAt = new Map<string, number>();
  entries.forEach((entry, index) => {
    const checked = checkEntry(entry, index + 1, firstSeenAt);
    if (typeof checked === 'string') problems.push(checked);
    else keys.push(make(checked.id, checked.material));
  });
  return { keys, problems };
}

// Returns the entry, or a problem. The problem text never quotes the key part, and quotes the id only
// once it is known to be a valid id: a reversed entry (`base64:id`) must not leak through the id.
function checkEntry(
  entry: string,
  position: number,
  firstSeenAt: Map<string, number>,
): { id: string; material: Buffer } | string {
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
  return { id, material };
}
