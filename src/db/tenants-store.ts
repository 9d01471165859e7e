import { auditFrom, auditParams, type AuditEntry } from './audit-store.js';
import { eventFrom, eventParams, type NewEvent } from './events-store.js';
import { prepared, type Queryable } from './pool.js';
import type { TenantStatus } from '../domain/tenant-rules.js';
import { TenantNotFoundError } from '../domain/record-errors.js';

/** Ownership records: external ref (ours) <-> sub-account id (the platform's). */
export interface TenantRow {
  externalRef: string;
  name: string;
  subaccountId: string | null;
  status: TenantStatus;
  createIdempotencyKey: string;
  createAttempts: number;
  createdAt: Date;
  updatedAt: Date;
  /** The plan version it is on (both null: none). */
  planName: string | null;
  planVersion: number | null;
  /** Since when its new top-ups wait for a drift check after a restore of the records (null: not held), and why. */
  moneyHeldSince: Date | null;
  moneyHoldReason: string | null;
}

const COLUMNS = `external_ref AS "externalRef", name, subaccount_id AS "subaccountId", status,
  create_idempotency_key AS "createIdempotencyKey", create_attempts AS "createAttempts",
  created_at AS "createdAt", updated_at AS "updatedAt", plan_name AS "planName", plan_version AS "planVersion",
  money_held_since AS "moneyHeldSince", money_hold_reason AS "moneyHoldReason"`;

/** Inserts the record unless the external ref exists; returns the stored row and whether it is new. */
export async function insertTenantIfAbsent(
  db: Queryable,
  input: { externalRef: string; name: string; createIdempotencyKey: string },
): Promise<{ row: TenantRow; inserted: boolean }> {
  const inserted = await db.query<TenantRow>(
    `INSERT INTO tenants (external_ref, name, status, create_idempotency_key)
     VALUES ($1::text, $2::text, 'creating', $3::text)
     ON CONFLICT (external_ref) DO NOTHING
     RETURNING ${COLUMNS}`,
    [input.externalRef, input.name, input.createIdempotencyKey],
  );
  if (inserted.rows[0]) return { row: inserted.rows[0], inserted: true };
  return { row: await getTenant(db, input.externalRef), inserted: false };
}

export async function findTenant(db: Queryable, externalRef: string): Promise<TenantRow | undefined> {
  const { rows } = await db.query<TenantRow>(
    prepared(`SELECT ${COLUMNS} FROM tenants WHERE external_ref = $1::text`, [externalRef]),
  );
  return rows[0];
}

export { TenantNotFoundError };

export async function getTenant(db: Queryable, externalRef: string): Promise<TenantRow> {
  const row = await findTenant(db, externalRef);
  if (!row) throw new TenantNotFoundError(externalRef);
  return row;
}

export async function recordSubaccount(db: Queryable, externalRef: string, subaccountId: string): Promise<void> {
  await db.query(
    `UPDATE tenants SET subaccount_id = $2::text, status = CASE WHEN status = 'creating' THEN 'created' ELSE status END,
            updated_at = now()
      WHERE external_ref = $1::text AND (subaccount_id IS NULL OR subaccount_id = $2::text)`,
    [externalRef, subaccountId],
  );
}

export async function setTenantStatus(db: Queryable, externalRef: string, status: TenantStatus): Promise<void> {
  await db.query(`UPDATE tenants SET status = $2::text, updated_at = now() WHERE external_ref = $1::text`, [
    externalRef,
    status,
  ]);
}

export async function listTenants(
  db: Queryable,
  options: { limit?: number; after?: string } = {},
): Promise<TenantRow[]> {
  const { rows } = await db.query<TenantRow>(
    `SELECT ${COLUMNS} FROM tenants WHERE ($1::text IS NULL OR external_ref > ` +
      `$1::text) ORDER BY external_ref LIMIT $2::int`,
    [options.after ?? null, options.limit ?? 100],
  );
  return rows;
}

/** The records of `refs` (those that exist), by external ref, a page of `limit` after `after`. */
export async function listTenantsByRefs(
  db: Queryable,
  refs: readonly string[],
  options: { limit?: number; after?: string } = {},
): Promise<TenantRow[]> {
  const { rows } = await db.query<TenantRow>(
    `SELECT ${COLUMNS} FROM tenants WHERE external_ref = ANY($1::text[]) AND ($2::text IS NULL OR external_ref > ` +
      `$2::text) ORDER BY external_ref LIMIT $3::int`,
    [refs, options.after ?? null, options.limit ?? refs.length],
  );
  return rows;
}

/** The tenants whose new money is held after a restore of the records (few: a restore's, until drift runs). */
export async function listMoneyHeldRefs(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ ref: string }>(
    `SELECT external_ref AS ref FROM tenants WHERE money_held_since IS NOT NULL ORDER BY external_ref`,
  );
  return rows.map((row) => row.ref);
}

/** Moves the status only from one of `from`; returns the row when it moved. */
export async function transitionTenant(
  db: Queryable,
  externalRef: string,
  from: readonly TenantStatus[],
  to: TenantStatus,
  reason: string | null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE tenants SET status = $3::text, status_reason = $4::text, updated_at = now()
      WHERE external_ref = $1::text AND status = ANY($2::text[])`,
    [externalRef, from, to, reason],
  );
  return (rowCount ?? 0) > 0;
}

export async function markTenantClosed(
  db: Queryable,
  externalRef: string,
  balanceMicroUsd: string | null,
): Promise<void> {
  await db.query(
    `UPDATE tenants SET status = 'closed', closed_at = coalesce(closed_at, now()),
            closed_balance_micro_usd = coalesce($2::numeric, closed_balance_micro_usd), updated_at = now()
      WHERE external_ref = $1::text`,
    [externalRef, balanceMicroUsd],
  );
}

/**
 * One round trip at the start of every onboarding attempt: records ownership (audited when new) or,
 * for an existing record of the same name still without a sub-account, counts this create attempt
 * (a later attempt then looks the tenant up before creating). Returns the row and whether it is new.
 */
export async function recordOnboardingAttempt(
  db: Queryable,
  input: { externalRef: string; name: string; createIdempotencyKey: string },
  audit: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'>,
): Promise<{ row: TenantRow; inserted: boolean }> {
  const { rows } = await db.query<TenantRow & { inserted: boolean }>(
    prepared(
      `WITH changed AS (
       INSERT INTO tenants (external_ref, name, status, create_idempotency_key, create_attempts)
       VALUES ($1::text, $2::text, 'creating', $3::text, 1)
       ON CONFLICT (external_ref) DO UPDATE SET create_attempts = tenants.create_attempts
         + CASE WHEN tenants.subaccount_id IS NULL AND tenants.name = EXCLUDED.name THEN 1 ELSE 0 END
       RETURNING ${COLUMNS}, (xmax = 0) AS inserted
     ), audited AS (${auditFrom('changed', 4, 'WHERE inserted')})
     SELECT * FROM changed`,
      [
        input.externalRef,
        input.name,
        input.createIdempotencyKey,
        ...auditParams({
          ...audit,
          action: 'tenant.recorded',
          externalRef: input.externalRef,
          details: { name: input.name },
        }),
      ],
    ),
  );
  const { inserted, ...row } = rows[0]!;
  return { row, inserted };
}

/**
 * An onboarding's record written again, with the sub-account its run holds, after the records went back in time (a
 * restore from a backup taken before the onboarding recorded it): `created`, as the run left it, marked with
 * `records_restored_at`, audited, in one statement. A record that exists (a sibling attempt wrote it) is left as it is.
 */
export async function restoreOnboardingRecord(
  db: Queryable,
  input: { externalRef: string; name: string; subaccountId: string; createIdempotencyKey: string },
  audit: AuditEntry,
): Promise<boolean> {
  const { rows } = await db.query(
    `WITH changed AS (
       INSERT INTO tenants (external_ref, name, subaccount_id, status, create_idempotency_key, records_restored_at,
         money_held_since, money_hold_reason)
       VALUES ($1::text, $2::text, $3::text, 'created', $4::text, now(), now(), 'its onboarding found its record gone')
       ON CONFLICT DO NOTHING
       RETURNING external_ref
     ), audited AS (${auditFrom('changed', 5)})
     SELECT 1 FROM changed`,
    [input.externalRef, input.name, input.subaccountId, input.createIdempotencyKey, ...auditParams(audit)],
  );
  return rows.length > 0;
}

/**
 * Holds the tenant's new money after its records went back in time (issue 48): from now, its top-ups are refused
 * (RECORDS_RESTORED) until a drift check that started after this records what the restore lost (releaseMoneyHold).
 * A hold already in place is kept as it is (its first reason and time). Audited `tenant.money_held` in the same
 * statement; true when this call set it.
 */
export async function holdMoney(
  db: Queryable,
  externalRef: string,
  reason: string,
  audit: Omit<AuditEntry, 'action' | 'details'>,
): Promise<boolean> {
  const { rows } = await db.query(
    `WITH changed AS (
       UPDATE tenants SET money_held_since = now(), money_hold_reason = $2::text
        WHERE external_ref = $1::text AND money_held_since IS NULL
        RETURNING external_ref
     ), audited AS (${auditFrom('changed', 3)})
     SELECT 1 FROM changed`,
    [externalRef, reason, ...auditParams({ ...audit, externalRef, action: 'tenant.money_held', details: { reason } })],
  );
  return rows.length > 0;
}

/**
 * Lifts the hold once drift check `checkId`, begun after the hold, has run for the tenant and left none of its
 * transfers unrecorded (every transfer the restore lost is recorded again). Audited `tenant.money_hold_released`.
 */
export async function releaseMoneyHold(
  db: Queryable,
  externalRef: string,
  checkId: string,
  audit: Omit<AuditEntry, 'action' | 'details'>,
): Promise<boolean> {
  const { rows } = await db.query(
    `WITH changed AS (
       UPDATE tenants SET money_held_since = NULL, money_hold_reason = NULL
        WHERE external_ref = $1::text AND money_held_since IS NOT NULL
          AND money_held_since < (SELECT started_at FROM drift_checks WHERE id = $2::bigint)
          AND NOT EXISTS (SELECT 1 FROM drift_findings f
                           WHERE f.external_ref = $1::text AND f.kind = 'transfer_unrecorded'
                             AND f.status = 'open' AND f.fixed_at IS NULL)
        RETURNING external_ref
     ), audited AS (${auditFrom('changed', 3)})
     SELECT 1 FROM changed`,
    [
      externalRef,
      checkId,
      ...auditParams({ ...audit, externalRef, action: 'tenant.money_hold_released', details: { checkId } }),
    ],
  );
  return rows.length > 0;
}

/** Records the sub-account id and its audit row in one statement. */
export async function recordSubaccountAudited(
  db: Queryable,
  externalRef: string,
  subaccountId: string,
  audit: AuditEntry,
): Promise<void> {
  await db.query(
    prepared(
      `WITH changed AS (
       UPDATE tenants SET subaccount_id = $2::text, 
         status = CASE WHEN status = 'creating' THEN 'created' ELSE status END, updated_at = now()
        WHERE external_ref = $1::text AND (subaccount_id IS NULL OR subaccount_id = $2::text)
        RETURNING external_ref
     ), audited AS (${auditFrom('changed', 3)})
     SELECT 1 FROM changed`,
      [externalRef, subaccountId, ...auditParams(audit)],
    ),
  );
}

/**
 * Moves the status from one of `from` to `to`, audited, in one statement. Returns the status the
 * tenant has afterwards and whether this call moved it (undefined when there is no record).
 */
export async function transitionTenantAudited(
  db: Queryable,
  externalRef: string,
  from: readonly TenantStatus[],
  to: TenantStatus,
  audit: AuditEntry,
  /** Written in the same statement, only when the tenant moved; `subaccountId` is added to its data. */
  event?: NewEvent,
  /**
   * The sub-account the run holds, recorded by the same statement where the record has none (records restored from
   * a backup taken before the run recorded it).
   */
  subaccountId?: string,
): Promise<{ moved: boolean; status: TenantStatus } | undefined> {
  const params: unknown[] = [externalRef, from, to, ...auditParams(audit), ...(event ? eventParams(event) : [])];
  const recordSub = subaccountId
    ? `, subaccount_id = coalesce(subaccount_id, $${params.push(subaccountId)}::text)`
    : '';
  const { rows } = await db.query<{ moved: boolean; status: TenantStatus }>(
    prepared(
      `WITH changed AS (
       UPDATE tenants SET status = $3::text, updated_at = now()${recordSub}
        WHERE external_ref = $1::text AND status = ANY($2::text[])
        RETURNING external_ref, subaccount_id
     ), audited AS (${auditFrom('changed', 4)})${
       event ? `, ${eventFrom('changed', 11, `jsonb_build_object('subaccountId', src.subaccount_id)`)}` : ''
     }
     SELECT EXISTS (SELECT 1 FROM changed) AS moved,
            CASE WHEN EXISTS (SELECT 1 FROM changed) THEN $3::text
              ELSE (SELECT status FROM tenants WHERE external_ref = $1::text) END AS status`,
      params,
    ),
  );
  const row = rows[0];
  return row?.status ? row : undefined;
}

/** The tenant's status under a row lock, in the caller's transaction (to tell a change from a repeat). */
export async function lockTenantStatus(db: Queryable, externalRef: string): Promise<TenantStatus | undefined> {
  const { rows } = await db.query<{ status: TenantStatus }>(
    `SELECT status FROM tenants WHERE external_ref = $1::text FOR UPDATE`,
    [externalRef],
  );
  return rows[0]?.status;
}

/**
 * Puts the tenant on a plan version, in the caller's transaction (under the tenant's row lock): `changed`
 * false when it is on that version already (a repeat writes nothing), else the version it was on (null:
 * none). Undefined: no such tenant.
 */
export async function setTenantPlan(
  db: Queryable,
  externalRef: string,
  plan: { name: string; version: number },
): Promise<{ changed: boolean; from: { name: string; version: number } | null } | undefined> {
  const { rows } = await db.query<{ planName: string | null; planVersion: number | null }>(
    `SELECT plan_name AS "planName", plan_version AS "planVersion"
       FROM tenants WHERE external_ref = $1::text FOR UPDATE`,
    [externalRef],
  );
  const row = rows[0];
  if (!row) return undefined;
  const from =
    row.planName === null || row.planVersion === null ? null : { name: row.planName, version: row.planVersion };
  if (from?.name === plan.name && from.version === plan.version) return { changed: false, from };
  await db.query(
    `UPDATE tenants SET plan_name = $2::text, plan_version = $3::int, updated_at = now() WHERE external_ref = $1::text`,
    [externalRef, plan.name, plan.version],
  );
  return { changed: true, from };
}

/**
 * A page of a plan rollout (issue 33): active tenants on plan `from`, not yet on `to`, after `after` in
 * external-ref order.
 */
export async function listPlanTenantsPage(
  db: Queryable,
  page: { from: string; to: { name: string; version: number }; after: string | null; limit: number },
): Promise<string[]> {
  const { rows } = await db.query<{ externalRef: string }>(
    `SELECT external_ref AS "externalRef" FROM tenants
      WHERE plan_name = $1::text AND status = 'active'
        AND NOT (plan_name = $2::text AND plan_version = $3::int)
        AND ($4::text IS NULL OR external_ref > $4::text)
      ORDER BY external_ref LIMIT $5::int`,
    [page.from, page.to.name, page.to.version, page.after, page.limit],
  );
  return rows.map((row) => row.externalRef);
}
