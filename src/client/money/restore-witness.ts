import type { Client } from '@temporalio/client';
import type { Pool } from '../../db/pool.js';
import { holdMoney } from '../../db/tenants-store.js';
import { topUpWorkflowId } from '../../domain/ids.js';
import { topUpPurpose } from '../../domain/top-up-ids.js';
import { transferKeyPrefix } from '../../domain/transfer-keys.js';

/**
 * Temporal as the witness that the records went back in time (issue 48). A top-up run writes its intent before it
 * moves money and settles it before it completes, so a run Temporal shows completed with a transfer made, whose intent
 * our records do not hold, proves the records were restored from a backup taken before it: the transfer it made is
 * on the platform and in no cap. The tenant's new money is then held (RECORDS_RESTORED) until a drift check records
 * the transfers the restore lost (tenants-store's releaseMoneyHold).
 *
 * Only runs that closed after the newest write our records hold of the tenant's transfers are looked at (less a
 * minute for the clocks of two servers): one visibility query, and usually one run, the last top-up.
 */
export const CLOCK_MARGIN_MS = 60_000;
const RUNS_LOOKED_AT = 50;

/** The top-up runs of a tenant that completed with a transfer our records do not hold (their workflow ids). */
export async function topUpRunsMissingFromRecords(pool: Pool, client: Client, externalRef: string): Promise<string[]> {
  const { rows } = await pool.query<{ since: Date }>(
    `SELECT coalesce((SELECT max(updated_at) FROM transfer_intents WHERE external_ref = $1::text),
                     (SELECT created_at FROM tenants WHERE external_ref = $1::text), now()) AS since`,
    [externalRef],
  );
  const since = new Date(rows[0]!.since.getTime() - CLOCK_MARGIN_MS);
  const prefix = topUpWorkflowId(externalRef, '');
  const closed: { workflowId: string; key: string }[] = [];
  const query =
    `WorkflowType = 'fundTenant' AND TenantExternalRef = '${externalRef.replace(/'/g, "''")}' ` +
    `AND ExecutionStatus = 'Completed' AND CloseTime > '${since.toISOString()}'`;
  for await (const run of client.workflow.list({ query, pageSize: RUNS_LOOKED_AT })) {
    if (run.workflowId.startsWith(prefix))
      closed.push({ workflowId: run.workflowId, key: run.workflowId.slice(prefix.length) });
    if (closed.length >= RUNS_LOOKED_AT) break;
  }
  if (!closed.length) return [];
  // Recorded under its purpose, or (drift recorded it again from the wallet) under its key alone.
  const prefixes = closed.map((run) => transferKeyPrefix(externalRef, topUpPurpose(run.key)));
  const { rows: recorded } = await pool.query<{ prefix: string }>(
    `SELECT p.prefix FROM unnest($2::text[], $3::text[]) AS p(purpose, prefix)
      WHERE EXISTS (SELECT 1 FROM transfer_intents t
                     WHERE t.external_ref = $1::text
                       AND (t.purpose = p.purpose
                            OR (t.kind = 'restored' AND starts_with(t.idempotency_key, p.prefix))))`,
    [externalRef, closed.map((run) => topUpPurpose(run.key)), prefixes],
  );
  const held = new Set(recorded.map((row) => row.prefix));
  const missing: string[] = [];
  for (const [i, run] of closed.entries()) {
    if (held.has(prefixes[i]!)) continue;
    // A completed run that moved nothing (an auto top-up skipped, a cap refusal never recorded) proves nothing.
    const result = (await client.workflow
      .getHandle(run.workflowId)
      .result()
      .catch(() => null)) as {
      transferId?: string | null;
    } | null;
    if (result?.transferId) missing.push(run.workflowId);
  }
  return missing;
}

/**
 * Holds the tenant's new money when Temporal shows a top-up its records lost; true when it is held now (by this call
 * or an earlier one). The hold is audited with the runs that proved it.
 */
export async function holdIfRecordsBehindRuns(
  pool: Pool,
  client: Client,
  externalRef: string,
  actor: string,
): Promise<boolean> {
  const missing = await topUpRunsMissingFromRecords(pool, client, externalRef);
  if (!missing.length) return false;
  const shown = missing.slice(0, 3).join(', ') + (missing.length > 3 ? ` and ${missing.length - 3} more` : '');
  await holdMoney(pool, externalRef, `Temporal shows top-up runs completed that its records lost: ${shown}`, {
    actor,
  });
  return true;
}
