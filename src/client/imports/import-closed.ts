import type { Client } from '@temporalio/client';
import { recordClosedTenant } from '../../db/imports-store.js';
import type { Pool } from '../../db/pool.js';
import { subaccountCreateKey } from '../../domain/transfer-keys.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { closedTenantsLostByRecords, type ClosedTenantLostByRecords } from '../../infra/records-witness.js';

/**
 * `tenantctl import closed --since <backup time> [--apply]` (POST /v1/imports/closed, permission imports.manage):
 * after a restore of the records, the tenants whose whole life fell between the backup and the restore (onboarded and
 * closed since) have no record at all, and the platform answers nothing about a closed sub-account (404), so neither
 * drift nor `import plan` can see them. Temporal's runs can: each tenant a closeTenant run closed after `since`, whose
 * onboarding completed and that no record holds, is listed with the sub-account its onboarding made and the transfers
 * its runs made; `--apply` records each as closed, its transfers as made (never sent again). Idempotent: a tenant
 * recorded since is left as it is.
 */
export interface ClosedImport {
  since: string;
  rows: ClosedTenantLostByRecords[];
  /** With apply: the refs recorded now. */
  recorded: string[];
  /** With apply: the refs a record held already (recorded since the plan was read). */
  alreadyRecorded: string[];
}

/** How far back a restore point may be: Temporal's retention bounds what its runs can still show anyway. */
const OLDEST_DAYS = 400;

/** The restore point as given (an ISO 8601 time with its offset), checked; one error naming the field and the rule. */
export function closedSinceOf(raw: unknown, now = new Date()): Date {
  const rule = 'must be the time of the backup the records were restored from, ISO 8601 with an offset';
  if (typeof raw !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(raw))
    throw new InvalidInputError([`since: ${rule} (e.g. 2026-11-29T08:00:00Z)`]);
  const since = new Date(raw);
  if (Number.isNaN(since.getTime())) throw new InvalidInputError([`since: ${rule}; "${raw}" is no such time`]);
  if (since.getTime() > now.getTime()) throw new InvalidInputError([`since: ${rule}; it is in the future`]);
  if (now.getTime() - since.getTime() > OLDEST_DAYS * 86_400_000)
    throw new InvalidInputError([`since: ${rule}, at most ${OLDEST_DAYS} days ago`]);
  return since;
}

export async function importClosedTenants(
  deps: { client: Client; pool: Pool },
  since: Date,
  options: { apply: boolean; requestedBy: string },
): Promise<ClosedImport> {
  const rows = await closedTenantsLostByRecords(deps.pool, deps.client, since);
  const outcome: ClosedImport = { since: since.toISOString(), rows, recorded: [], alreadyRecorded: [] };
  if (!options.apply) return outcome;
  for (const row of rows.filter((r) => r.problems.length === 0)) {
    const recorded = await recordClosedTenant(
      deps.pool,
      {
        externalRef: row.externalRef,
        subaccountId: row.subaccountId,
        createIdempotencyKey: subaccountCreateKey(row.externalRef),
        transfers: row.transfers,
        evidence: {
          since: outcome.since,
          onboardedBy: row.onboardedBy,
          closedBy: row.closedBy,
          closedAt: row.closedAt,
        },
      },
      { actor: options.requestedBy },
    );
    (recorded ? outcome.recorded : outcome.alreadyRecorded).push(row.externalRef);
  }
  return outcome;
}
