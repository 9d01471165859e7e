import type { Queryable } from '../../db/pool.js';
import { getTenant } from '../../db/tenants-store.js';
import { setLowBalanceThreshold } from '../../db/wallet-alerts-store.js';

/** Sets (or, with null, clears) a tenant's low-balance alert; TenantNotFoundError when we have no such tenant. */
export async function setLowBalanceAlert(db: Queryable, externalRef: string, belowMicroUsd: string | null) {
  await getTenant(db, externalRef);
  await setLowBalanceThreshold(db, externalRef, belowMicroUsd);
}
