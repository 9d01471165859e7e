import { listLiveProcesses, listParentKeys } from '../db/parent-keys-store.js';
import type { Pool } from '../db/pool.js';

export interface ParentKeyView {
  /** Our record id: the credential id processes report. */
  id: string;
  platformKeyId: string | null;
  status: string;
  source: string;
  fingerprint: string | null;
  createdAt: string;
  currentSince: string | null;
  revokedAt: string | null;
}

export interface ParentKeysView {
  current: ParentKeyView | null;
  keys: ParentKeyView[];
  /** Processes that reported within `freshMs`, with the key record each uses. */
  processes: Array<{ processId: string; kind: string; parentKeyId: string | null; seenAgoMs: number }>;
}

/** What `tenantctl parent-key show` prints: ids and fingerprints, never a token. */
export async function showParentKeys(pool: Pool, freshMs = 60_000): Promise<ParentKeysView> {
  const [rows, processes] = await Promise.all([listParentKeys(pool), listLiveProcesses(pool, freshMs)]);
  const keys = rows.map((r) => ({
    id: r.id,
    platformKeyId: r.platformKeyId,
    status: r.status,
    source: r.source,
    fingerprint: r.fingerprint,
    createdAt: r.createdAt.toISOString(),
    currentSince: r.currentSince?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }));
  return { current: keys.find((k) => k.status === 'current') ?? null, keys, processes };
}
