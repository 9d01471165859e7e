import { appendAudit } from '../db/audit-store.js';
import {
  deleteFundingPolicy,
  findFundingPolicy,
  getFundingParent,
  setParentDailyCap,
  upsertFundingPolicy,
  type FundingPolicyRow,
} from '../db/funding-store.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { findTenant, TenantNotFoundError } from '../db/tenants-store.js';
import { capUsage } from '../db/top-ups-store.js';
import { fundingPolicySchema, parentCapSchema } from '../domain/funding-policy-input.js';
import { parseInput } from '../domain/tenant-input.js';

/**
 * Auto top-up policies and the parent's daily cap, for tenantctl and the gateway: validated by one
 * schema, written with their audit row in one transaction, shown with what the caps hold today.
 */
export interface FundingPolicyView {
  externalRef: string;
  policy: {
    below: string;
    to: string;
    maxPerDay: string;
    maxPerMonth: string | null;
    updatedBy: string;
    updatedAt: string;
  } | null;
  /** What top-ups of this tenant hold against its caps (UTC day and month), and the parent's today. */
  usage: { tenantDay: string; tenantMonth: string; parentDay: string };
  parent: { maxPerDay: string | null; insufficientSince: string | null };
}

function policyOut(row: FundingPolicyRow | undefined): FundingPolicyView['policy'] {
  return row
    ? {
        below: row.belowMicroUsd,
        to: row.toMicroUsd,
        maxPerDay: row.maxPerDayMicroUsd,
        maxPerMonth: row.maxPerMonthMicroUsd,
        updatedBy: row.updatedBy,
        updatedAt: row.updatedAt.toISOString(),
      }
    : null;
}

export async function setFundingPolicy(pool: Pool, externalRef: string, raw: unknown): Promise<FundingPolicyView> {
  const input = parseInput(fundingPolicySchema, raw);
  await withTransaction(pool, async (tx) => {
    const tenant = await findTenant(tx, externalRef);
    if (!tenant) throw new TenantNotFoundError(externalRef);
    const row = await upsertFundingPolicy(tx, {
      externalRef,
      belowMicroUsd: input.below,
      toMicroUsd: input.to,
      maxPerDayMicroUsd: input.maxPerDay,
      maxPerMonthMicroUsd: input.maxPerMonth ?? null,
      updatedBy: input.updatedBy,
    });
    await appendAudit(tx, {
      actor: `operator:${input.updatedBy}`,
      action: 'funding.policy_set',
      externalRef,
      details: policyOut(row) ?? {},
    });
  });
  return showFundingPolicy(pool, externalRef);
}

export async function clearFundingPolicy(
  pool: Pool,
  externalRef: string,
  updatedBy: string,
): Promise<{ externalRef: string; cleared: boolean }> {
  return withTransaction(pool, async (tx) => {
    if (!(await findTenant(tx, externalRef))) throw new TenantNotFoundError(externalRef);
    const cleared = await deleteFundingPolicy(tx, externalRef);
    if (cleared)
      await appendAudit(tx, { actor: `operator:${updatedBy}`, action: 'funding.policy_cleared', externalRef });
    return { externalRef, cleared };
  });
}

export async function showFundingPolicy(pool: Pool, externalRef: string): Promise<FundingPolicyView> {
  if (!(await findTenant(pool, externalRef))) throw new TenantNotFoundError(externalRef);
  const [row, usage, parent] = await Promise.all([
    findFundingPolicy(pool, externalRef),
    capUsage(pool, externalRef),
    getFundingParent(pool),
  ]);
  return {
    externalRef,
    policy: policyOut(row),
    usage: {
      tenantDay: usage.tenantDay.toString(),
      tenantMonth: usage.tenantMonth.toString(),
      parentDay: usage.parentDay.toString(),
    },
    parent: { maxPerDay: parent.maxPerDayMicroUsd, insufficientSince: parent.insufficientSince?.toISOString() ?? null },
  };
}

export async function setParentCap(
  pool: Pool,
  raw: unknown,
): Promise<{ maxPerDay: string | null; insufficientSince: string | null }> {
  const input = parseInput(parentCapSchema, raw);
  return withTransaction(pool, async (tx) => {
    const row = await setParentDailyCap(tx, input.maxPerDay, input.updatedBy);
    await appendAudit(tx, {
      actor: `operator:${input.updatedBy}`,
      action: 'funding.parent_cap_set',
      details: { maxPerDay: input.maxPerDay },
    });
    return { maxPerDay: row.maxPerDayMicroUsd, insufficientSince: row.insufficientSince?.toISOString() ?? null };
  });
}

export async function showParentFunding(
  pool: Pool,
): Promise<{ maxPerDay: string | null; insufficientSince: string | null; usedToday: string }> {
  const parent = await getFundingParent(pool);
  const { rows } = await pool.query<{ used: string }>(
    `SELECT coalesce(sum(amount_micro_usd), 0)::text AS used FROM transfer_intents
      WHERE reserved_on = (now() AT TIME ZONE 'UTC')::date AND state NOT IN ('failed', 'cancelled', 'refused')`,
  );
  return {
    maxPerDay: parent.maxPerDayMicroUsd,
    insufficientSince: parent.insufficientSince?.toISOString() ?? null,
    usedToday: rows[0]!.used,
  };
}
