import { listUnmanagedKeys } from '../db/adoptions-store.js';
import type { Queryable } from '../db/pool.js';
import { findActiveKey } from '../db/tenant-keys-store.js';

/**
 * An imported tenant's slot that holds only unmanaged keys: a plain rotation has no key of ours to
 * replace (an adoption does that: `rotate-key --adopt`, `POST /v1/tenants/:ref/adopt`).
 */
export async function hasOnlyUnmanagedKeys(db: Queryable, externalRef: string, slot: string): Promise<boolean> {
  return (await listUnmanagedKeys(db, externalRef, slot)).length > 0 && !(await findActiveKey(db, externalRef, slot));
}
