import { prepared, type Queryable } from './pool.js';

/**
 * Auto top-up policies (one per tenant) and the parent's row: its daily cap over every top-up of the
 * fleet, and whether the platform last said the parent's own balance is insufficient.
 */
export interface FundingPolicyRow {
  externalRef: string;
  belowMicroUsd: string;
  toMicroUsd: string;
  maxPerDayMicroUsd: string;
  maxPerMonthMicroUsd: string | null;
  updatedBy: string;
  updatedAt: Date;
}

export interface FundingParentRow {
  maxPerDayMicroUsd: string | null;
  insufficientSince: Date | null;
  /** The smallest amount the platform refused since then (null: not recorded; every amount is held). */
  insufficientMicroUsd: string | null;
  updatedBy: string;
  updatedAt: Date;
}

const POLICY_COLUMNS = `external_ref AS "externalRef", below_micro_usd::text AS "belowMicroUsd",
  to_micro_usd::text AS "toMicroUsd",
  max_per_day_micro_usd::text AS "maxPerDayMicroUsd", max_per_month_micro_usd::text AS "maxPerMonthMicroUsd",
  updated_by AS "updatedBy", updated_at AS "updatedAt"`;
const PARENT_COLUMNS = `max_per_day_micro_usd::text AS "maxPerDayMicroUsd", insufficient_since AS "insufficientSince",
  insufficient_micro_usd::text AS "insufficientMicroUsd", updated_by AS "updatedBy", updated_at AS "updatedAt"`;

export async function upsertFundingPolicy(
  db: Queryable,
  policy: {
    externalRef: string;
    belowMicroUsd: string;
    toMicroUsd: string;
    maxPerDayMicroUsd: string;
    maxPerMonthMicroUsd: string | null;
    updatedBy: string;
  },
): Promise<FundingPolicyRow> {
  const { rows } = await db.query<FundingPolicyRow>(
    `INSERT INTO funding_policies (external_ref, below_micro_usd, to_micro_usd, max_per_day_micro_usd,
      max_per_month_micro_usd, updated_by)
     VALUES ($1::text, $2::numeric, $3::numeric, $4::numeric, $5::numeric, $6::text)
     ON CONFLICT (external_ref) DO UPDATE SET
       below_micro_usd = EXCLUDED.below_micro_usd, to_micro_usd = EXCLUDED.to_micro_usd,
       max_per_day_micro_usd = EXCLUDED.max_per_day_micro_usd,
       max_per_month_micro_usd = EXCLUDED.max_per_month_micro_usd,
       updated_by = EXCLUDED.updated_by, updated_at = now()
     RETURNING ${POLICY_COLUMNS}`,
    [
      policy.externalRef,
      policy.belowMicroUsd,
      policy.toMicroUsd,
      policy.maxPerDayMicroUsd,
      policy.maxPerMonthMicroUsd,
      policy.updatedBy,
    ],
  );
  return rows[0]!;
}

export async function findFundingPolicy(db: Queryable, externalRef: string): Promise<FundingPolicyRow | undefined> {
  const { rows } = await db.query<FundingPolicyRow>(
    `SELECT ${POLICY_COLUMNS} FROM funding_policies WHERE external_ref = $1::text`,
    [externalRef],
  );
  return rows[0];
}

export async function deleteFundingPolicy(db: Queryable, externalRef: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM funding_policies WHERE external_ref = $1::text`, [externalRef]);
  return (rowCount ?? 0) > 0;
}

/** One page of tenants with a policy that may take top-ups (active or suspended), by external ref. */
export async function listPolicyTenantsPage(
  db: Queryable,
  page: { after: string | null; limit: number },
): Promise<Array<FundingPolicyRow & { subaccountId: string }>> {
  const { rows } = await db.query<FundingPolicyRow & { subaccountId: string }>(
    `SELECT p.*, t.subaccount_id AS "subaccountId"
       FROM (SELECT ${POLICY_COLUMNS} FROM funding_policies) p JOIN tenants t ON t.external_ref = p."externalRef"
      WHERE t.status IN ('active', 'suspended') AND t.subaccount_id IS NOT NULL
        AND ($1::text IS NULL OR p."externalRef" > $1::text)
      ORDER BY p."externalRef" LIMIT $2::int`,
    [page.after, page.limit],
  );
  return rows;
}

/**
 * The parent's funding row and whether `externalRef` is recorded, in one statement: what the onboarding's preflight
 * reads (activities/onboarding-preflight.ts).
 */
export async function getFundingParentAndTenantRecorded(
  db: Queryable,
  externalRef: string,
): Promise<{ parent: FundingParentRow; tenantRecorded: boolean }> {
  const { rows } = await db.query<FundingParentRow & { tenantRecorded: boolean }>(
    prepared(
      `SELECT ${PARENT_COLUMNS}, EXISTS (SELECT 1 FROM tenants WHERE external_ref = $1::text) AS "tenantRecorded"
         FROM funding_parent WHERE id`,
      [externalRef],
    ),
  );
  const { tenantRecorded, ...parent } = rows[0]!;
  return { parent, tenantRecorded };
}

export async function getFundingParent(
  db: Queryable,
  options: { lock?: 'update' | 'share' } = {},
): Promise<FundingParentRow> {
  const lock = options.lock === 'update' ? ' FOR UPDATE' : options.lock === 'share' ? ' FOR SHARE' : '';
  const { rows } = await db.query<FundingParentRow>(
    prepared(`SELECT ${PARENT_COLUMNS} FROM funding_parent WHERE id${lock}`, []),
  );
  return rows[0]!;
}

export async function setParentDailyCap(
  db: Queryable,
  maxPerDayMicroUsd: string | null,
  updatedBy: string,
): Promise<FundingParentRow> {
  const { rows } = await db.query<FundingParentRow>(
    `UPDATE funding_parent SET max_per_day_micro_usd = $1::numeric, updated_by = ` +
      `$2::text, updated_at = now() WHERE id RETURNING ${PARENT_COLUMNS}`,
    [maxPerDayMicroUsd, updatedBy],
  );
  return rows[0]!;
}

/** Sets (once) or clears the parent's insufficient-balance state; returns whether it changed. */
export async function setParentInsufficient(db: Queryable, insufficient: boolean, updatedBy: string): Promise<boolean> {
  const { rowCount } = await db.query(
    insufficient
      ? `UPDATE funding_parent SET insufficient_since = now(), updated_by = $1::text, ` +
          `updated_at = now() WHERE id AND insufficient_since IS NULL`
      : `UPDATE funding_parent SET insufficient_since = NULL, insufficient_micro_usd = NULL, updated_by = $1::text, ` +
          `updated_at = now() WHERE id AND insufficient_since IS NOT NULL`,
    [updatedBy],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * The platform refused `amountMicroUsd` for INSUFFICIENT_BALANCE: start the parent's state (with that
 * amount) or lower its amount to this one. A state whose amount is not recorded stays so (every
 * amount held). Returns what changed.
 */
export async function noteParentShortfall(
  db: Queryable,
  amountMicroUsd: string,
  updatedBy: string,
): Promise<'set' | 'lowered' | 'unchanged'> {
  const { rows } = await db.query<{ was: Date | null }>(
    `WITH old AS (
       SELECT insufficient_since AS was FROM funding_parent
        WHERE id AND (insufficient_since IS NULL OR insufficient_micro_usd > $1::numeric) FOR UPDATE
     )
     UPDATE funding_parent p SET insufficient_since = coalesce(old.was, now()), insufficient_micro_usd = $1::numeric,
       updated_by = $2::text, updated_at = now()
       FROM old WHERE p.id
     RETURNING old.was`,
    [amountMicroUsd, updatedBy],
  );
  if (!rows[0]) return 'unchanged';
  return rows[0].was === null ? 'set' : 'lowered';
}
