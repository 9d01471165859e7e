import type { Queryable } from '../db/pool.js';
import { findTenant, getTenant, type TenantRow } from '../db/tenants-store.js';

export type { TenantRow };

/** The tenant's record, or undefined when we have none. */
export function findTenantRecord(db: Queryable, externalRef: string): Promise<TenantRow | undefined> {
  return findTenant(db, externalRef);
}

/** The tenant's record; TenantNotFoundError (a 404 at the gateway) when we have none. */
export function requireTenant(db: Queryable, externalRef: string): Promise<TenantRow> {
  return getTenant(db, externalRef);
}
