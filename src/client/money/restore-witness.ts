import type { Client } from '@temporalio/client';
import type { Pool } from '../../db/pool.js';
import { holdMoney } from '../../db/tenants-store.js';
import { topUpsLostByRecords } from '../../infra/records-witness.js';

/**
 * Holds the tenant's new money when Temporal shows a top-up its records lost (src/infra/records-witness.ts); true when
 * it is held now (by this call or an earlier one). The hold is audited with the runs that proved it.
 */
export async function holdIfRecordsBehindRuns(
  pool: Pool,
  client: Client,
  externalRef: string,
  actor: string,
): Promise<boolean> {
  const missing = (await topUpsLostByRecords(pool, client, externalRef)).map((lost) => lost.workflowId);
  if (!missing.length) return false;
  const shown = missing.slice(0, 3).join(', ') + (missing.length > 3 ? ` and ${missing.length - 3} more` : '');
  await holdMoney(pool, externalRef, `Temporal shows top-up runs completed that its records lost: ${shown}`, {
    actor,
  });
  return true;
}
