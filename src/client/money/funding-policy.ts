import { appendAudit } from '../../db/audit-store.js';
import {
  deleteFundingPolicy,
  findFundingPolicy,
  getFundingParent,
  setParentDailyCap,
  upsertFundingPolicy,
  type FundingPolicyRow,
} from '../../db/funding-store.js';
import { withTransaction, type Pool } from '../../db/pool.js';
import { findTenant, lockTenantStatus, TenantNotFoundError } from '../../db/tenants-store.js';
import { assertTenantAllows, fundingPolicyRefusal } from '../../domain/tenant-rules.js';
import { capUsage } from '../../db/top-ups-store.js';
import { fundingPolicySchema, parentCapSchema } from '../../domain/funding-policy-input.js';
import { parseInput } from '../../domain/tenant-input.js';
import { assertWithinTransferLimit } from '../../domain/transfer-limit.js';

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
  parent: ParentFundingState;
}

/** The parent's daily cap, and the smallest amount the platform refused for its balance since when. */
export interface ParentFundingState {
  maxPerDay: string | null;
  insufficientSince: string | null;
  /** Transfers of this much or more wait (null with insufficientSince set: every amount waits). */
  insufficientMicroUsd: string | null;
}

function parentOut(row: Awaited<ReturnType<typeof getFundingParent>>): ParentFundingState {
  return {
    maxPerDay: row.maxPerDayMicroUsd,
    insufficientSince: row.insufficientSince?.toISOString() ?? null,
    insufficientMicroUsd: row.insufficientMicroUsd,
  };
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

/**
 * `maxTransferMicroUsd`: TRANSFER_MAX_MICRO_USD (absent: its default). An auto top-up from an empty
 * wallet moves `to` in one transfer, so a policy with `to` above the limit is refused; `maxPerDay`
 * may exceed it (several top-ups a day).
 */
export async function setFundingPolicy(
  pool: Pool,
  externalRef: string,
  raw: unknown,
  options: { maxTransferMicroUsd?: string | undefined } = {},
): Promise<FundingPolicyView> {
  const input = parseInput(fundingPolicySchema, raw);
  assertWithinTransferLimit({ to: input.to }, options.maxTransferMicroUsd);
  await withTransaction(pool, async (tx) => {
    // Under the tenant's row lock: a close that starts now waits for this write, or this one sees it.
    const status = await lockTenantStatus(tx, externalRef);
    if (status === undefined) throw new TenantNotFoundError(externalRef);
    assertTenantAllows(fundingPolicyRefusal, { externalRef, status, subaccountId: null });
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
    parent: parentOut(parent),
  };
}

export async function setParentCap(pool: Pool, raw: unknown): Promise<ParentFundingState> {
  const input = parseInput(parentCapSchema, raw);
  return withTransaction(pool, async (tx) => {
    const row = await setParentDailyCap(tx, input.maxPerDay, input.updatedBy);
    await appendAudit(tx, {
      actor: `operator:${input.updatedBy}`,
      action: 'funding.parent_cap_set',
      details: { maxPerDay: input.maxPerDay },
    });
    return parentOut(row);
  });
}

export async function showParentFunding(pool: Pool): Promise<ParentFundingState & { usedToday: string }> {
  const parent = await getFundingParent(pool);
  const { rows } = await pool.query<{ used: string }>(
    `SELECT coalesce(sum(amount_micro_usd), 0)::text AS used FROM transfer_intents
      WHERE reserved_on = (now() AT TIME ZONE 'UTC')::date AND state NOT IN ('failed', 'cancelled', 'refused')`,
  );
  return { ...parentOut(parent), usedToday: rows[0]!.used };
}
