import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { onboardingWorkflowId, topUpWorkflowId } from '../domain/ids.js';
import { ONBOARDING_PURPOSE } from '../domain/onboarding.js';
import { tenantExternalRefKey } from '../domain/search-attributes.js';
import { topUpPurpose } from '../domain/top-up-ids.js';
import { transferKey, transferKeyPrefix } from '../domain/transfer-keys.js';

/**
 * Temporal as the witness that the records went back in time (issue 48). A top-up run writes its intent before it
 * moves money and settles it before it completes, so a run Temporal shows completed with a transfer made, whose intent
 * our records do not hold, proves the records were restored from a backup taken before it: the transfer it made is
 * on the platform and in no cap. The gateway then holds the tenant's new money (src/client/money/restore-witness.ts);
 * drift records such a transfer from the run when the tenant's wallet can no longer be read (a closed tenant).
 *
 * Only runs that closed after the newest write our records hold of the tenant's transfers are looked at (less a
 * minute for the clocks of two servers): one visibility query, and usually one run, the last top-up.
 */
export const CLOCK_MARGIN_MS = 60_000;
const RUNS_LOOKED_AT = 50;

/** What the witness reads our records with (a pool or a transaction's client; src/db/pool.ts's Queryable). */
interface RecordsReader {
  query<Row extends object>(text: string, values: unknown[]): Promise<{ rows: Row[] }>;
}

/** A transfer a completed top-up run made that our records do not hold. */
export interface TransferLostByRecords {
  workflowId: string;
  /** The caller's idempotency key of the top-up. */
  callerKey: string;
  transferId: string | null;
  amountMicroUsd: string;
  /** The platform's idempotency key: the run's own (results since issue 48), else its intent's first generation. */
  idempotencyKey: string;
}

/** The transfers of a tenant's completed top-up runs that our records do not hold. */
export async function topUpsLostByRecords(
  db: RecordsReader,
  client: Client,
  externalRef: string,
  /** Runs closed after this (absent: after the newest write our records hold of the tenant's transfers). */
  closedAfter?: Date,
): Promise<TransferLostByRecords[]> {
  const { rows } = await db.query<{ since: Date }>(
    `SELECT coalesce((SELECT max(updated_at) FROM transfer_intents WHERE external_ref = $1::text),
                     (SELECT created_at FROM tenants WHERE external_ref = $1::text), now()) AS since`,
    [externalRef],
  );
  const since = closedAfter ?? new Date(rows[0]!.since.getTime() - CLOCK_MARGIN_MS);
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
  const { rows: recorded } = await db.query<{ prefix: string }>(
    `SELECT p.prefix FROM unnest($2::text[], $3::text[]) AS p(purpose, prefix)
      WHERE EXISTS (SELECT 1 FROM transfer_intents t
                     WHERE t.external_ref = $1::text
                       AND (t.purpose = p.purpose
                            OR (t.kind = 'restored' AND starts_with(t.idempotency_key, p.prefix))))`,
    [externalRef, closed.map((run) => topUpPurpose(run.key)), prefixes],
  );
  const held = new Set(recorded.map((row) => row.prefix));
  const lost: TransferLostByRecords[] = [];
  for (const [i, run] of closed.entries()) {
    if (held.has(prefixes[i]!)) continue;
    // A completed run that moved nothing (an auto top-up skipped, a cap refusal never recorded) proves nothing.
    const result = (await client.workflow
      .getHandle(run.workflowId)
      .result()
      .catch(() => null)) as {
      state?: string;
      transferId?: string | null;
      transferKey?: string;
      amountMicroUsd?: string;
    } | null;
    if (result?.state !== 'succeeded' || !result.amountMicroUsd) continue;
    lost.push({
      workflowId: run.workflowId,
      callerKey: run.key,
      transferId: result.transferId ?? null,
      amountMicroUsd: result.amountMicroUsd,
      idempotencyKey: result.transferKey ?? transferKey(externalRef, topUpPurpose(run.key), 1),
    });
  }
  return lost;
}

/** A tenant whose whole life since a restore point our records lost: onboarded and closed by runs Temporal shows. */
export interface ClosedTenantLostByRecords {
  externalRef: string;
  subaccountId: string;
  onboardedBy: string;
  closedBy: string;
  closedAt: string | null;
  /** Its transfers: the onboarding's funding (purpose initial-funding) and each top-up run's. */
  transfers: Array<{
    purpose: string;
    idempotencyKey: string;
    amountMicroUsd: string;
    transferId: string | null;
    madeBy: string;
  }>;
  /** Why it cannot be recorded from its runs (empty: it can). */
  problems: string[];
}

/**
 * The tenants that Temporal shows closed (a closeTenant run completed) after `since`, whose onboarding completed too,
 * and that no record holds: a restore from a backup taken before they were onboarded took them out of the records,
 * and the platform answers nothing about a closed sub-account (404). What their runs say is all there is.
 */
export async function closedTenantsLostByRecords(
  db: RecordsReader,
  client: Client,
  since: Date,
): Promise<ClosedTenantLostByRecords[]> {
  const closes = new Map<string, { workflowId: string; closedAt: string | null }>();
  const query =
    `WorkflowType = 'closeTenant' AND ExecutionStatus = 'Completed' ` + `AND CloseTime > '${since.toISOString()}'`;
  for await (const run of client.workflow.list({ query, pageSize: 200 })) {
    const ref = run.typedSearchAttributes.get(tenantExternalRefKey);
    if (ref && !closes.has(ref))
      closes.set(ref, { workflowId: run.workflowId, closedAt: run.closeTime?.toISOString() ?? null });
  }
  if (!closes.size) return [];
  const { rows } = await db.query<{ ref: string }>(
    `SELECT external_ref AS ref FROM tenants WHERE external_ref = ANY($1::text[])`,
    [[...closes.keys()]],
  );
  const recorded = new Set(rows.map((row) => row.ref));
  const lost: ClosedTenantLostByRecords[] = [];
  for (const [externalRef, close] of [...closes].sort(([a], [b]) => a.localeCompare(b))) {
    if (recorded.has(externalRef)) continue;
    const onboarding = await completedOnboarding(client, externalRef);
    if (!onboarding) continue; // not onboarded by us, or its onboarding did not complete
    const { onboardedBy, funding } = onboarding;
    const problems: string[] = [];
    const transfers: ClosedTenantLostByRecords['transfers'] = [];
    if (funding === 'amount not shown')
      problems.push(`${onboardedBy} made a funding transfer and its result does not say the amount`);
    else if (funding) transfers.push({ ...funding, purpose: ONBOARDING_PURPOSE, madeBy: onboardedBy });
    for (const topUp of await topUpsLostByRecords(db, client, externalRef, since))
      transfers.push({
        purpose: `restored:${topUp.idempotencyKey}`,
        idempotencyKey: topUp.idempotencyKey,
        amountMicroUsd: topUp.amountMicroUsd,
        transferId: topUp.transferId,
        madeBy: topUp.workflowId,
      });
    lost.push({
      externalRef,
      subaccountId: onboarding.subaccountId,
      onboardedBy,
      closedBy: close.workflowId,
      closedAt: close.closedAt,
      transfers,
      problems,
    });
  }
  return lost;
}

/**
 * What a tenant's completed onboarding made, from its result: its sub-account and its funding transfer (the key the
 * platform saw: the result's, else the intent's first generation). Null when no onboarding of ours completed.
 */
export async function completedOnboarding(
  client: Client,
  externalRef: string,
): Promise<{
  onboardedBy: string;
  subaccountId: string;
  funding: { idempotencyKey: string; amountMicroUsd: string; transferId: string | null } | 'amount not shown' | null;
} | null> {
  const onboardedBy = onboardingWorkflowId(externalRef);
  const result = (await client.workflow
    .getHandle(onboardedBy)
    .result()
    .catch(() => null)) as {
    subaccountId?: string;
    funding?: { transferId: string | null; amountMicroUsd?: string; transferKey?: string } | null;
  } | null;
  if (!result?.subaccountId) return null;
  const made = result.funding;
  const funding = !made
    ? null
    : !made.amountMicroUsd
      ? ('amount not shown' as const)
      : {
          idempotencyKey: made.transferKey ?? transferKey(externalRef, ONBOARDING_PURPOSE, 1),
          amountMicroUsd: made.amountMicroUsd,
          transferId: made.transferId,
        };
  return { onboardedBy, subaccountId: result.subaccountId, funding };
}

/**
 * How a run our records name ended, read from the run itself (strongly consistent, unlike a listing): null while it
 * runs; 'NOT_FOUND' when Temporal has no such run (never started, or past retention).
 */
export async function endedRunStatus(client: Client, workflowId: string, runId: string | null): Promise<string | null> {
  try {
    const { status } = await client.workflow.getHandle(workflowId, runId ?? undefined).describe();
    return status.name === 'RUNNING' ? null : status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw error;
  }
}

/** The state a rotation record takes from how its run ended; none for a run that ended otherwise (terminated, gone). */
export const ROTATION_END_STATE: Record<string, 'completed' | 'failed' | 'cancelled'> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELED: 'cancelled',
  TIMED_OUT: 'failed',
};
