import { auditFrom, auditParams, type AuditEntry } from './audit-store.js';
import { findFundingPolicy, getFundingParent } from './funding-store.js';
import { shortfallHolds } from '../domain/parent-shortfall.js';
import { transferRefusal } from '../domain/tenant-rules.js';
import type { PoolClient } from 'pg';
import type { Queryable } from './pool.js';
import { transferKeyPrefixOf } from '../domain/transfer-keys.js';
import { TRANSFER_INTENT_COLUMNS, type TransferIntentRow } from './transfer-intents-store.js';

/**
 * The spend-cap reservation of a top-up: ONE transaction that locks the parent's row (every
 * reservation of the fleet queues behind it) and the tenant's, sums what the caps already hold, and
 * writes the intent — `pending` (the reservation) or `refused` (naming the cap). A top-up holds its
 * amount against its UTC day and month from this moment until it fails for good, so racing sweeps,
 * manual top-ups and retries after lost responses can never together exceed a cap.
 */
export const CapName = {
  tenantDay: 'tenant_per_day',
  tenantMonth: 'tenant_per_month',
  parentDay: 'parent_per_day',
} as const;
export type CapName = (typeof CapName)[keyof typeof CapName];

export interface ReserveTopUpInput {
  externalRef: string;
  callerKey: string;
  purpose: string;
  /** The platform idempotency key of the first attempt. */
  idempotencyKey: string;
  amountMicroUsd: string;
  kind: 'top-up' | 'auto';
  requestedBy: string;
  reason: string | null;
  /** Auto only: skip when any transfer of the tenant moved since this (database) time. */
  balanceReadAt: string | null;
}

export type ReserveTopUpResult =
  | { outcome: 'reserved' | 'refused' | 'existing'; intent: TransferIntentRow; subaccountId: string }
  | { outcome: 'tenant_missing' }
  | { outcome: 'tenant_closed' | 'tenant_not_provisioned'; status: string }
  /** A top-up of a tenant whose records were restored, before its drift check (an auto top-up is skipped). */
  | { outcome: 'money_held'; message: string }
  | { outcome: 'skipped'; why: 'parent_insufficient' | 'balance_changed' | 'records_restored' };

/** Runs inside the caller's transaction (withTransaction). */
export async function reserveTopUp(
  tx: PoolClient,
  input: ReserveTopUpInput,
  audit: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'>,
): Promise<ReserveTopUpResult> {
  const parent = await lockFundingParent(tx);
  const { rows: tenants } = await tx.query<{
    status: string;
    subaccountId: string | null;
    moneyHeldSince: Date | null;
    moneyHoldReason: string | null;
  }>(
    `SELECT status, subaccount_id AS "subaccountId", money_held_since AS "moneyHeldSince",
            money_hold_reason AS "moneyHoldReason"
       FROM tenants WHERE external_ref = $1::text FOR UPDATE`,
    [input.externalRef],
  );
  const tenant = tenants[0];
  if (!tenant) return { outcome: 'tenant_missing' };
  // The same statement finds a transfer of this key (any generation) that drift recorded again after a restore.
  const { rows: existing } = await tx.query<TransferIntentRow>(
    `SELECT ${TRANSFER_INTENT_COLUMNS} FROM transfer_intents
      WHERE external_ref = $1::text
        AND (caller_key = $2::text OR (starts_with(idempotency_key, $3::text) AND kind = 'restored'))`,
    [input.externalRef, input.callerKey, transferKeyPrefixOf(input.idempotencyKey)],
  );
  const found = existing[0]?.kind === 'restored' ? await claimRestored(tx, input) : existing[0];
  // A recorded request answers as recorded (the caller compares it), even once the tenant closed.
  if (found) return { outcome: 'existing', intent: found, subaccountId: tenant.subaccountId ?? '' };
  const refused = transferRefusal({ externalRef: input.externalRef, ...tenant });
  if (refused?.code === 'RECORDS_RESTORED')
    return input.kind === 'auto'
      ? { outcome: 'skipped', why: 'records_restored' }
      : { outcome: 'money_held', message: refused.message };
  if (refused)
    return {
      outcome: refused.code === 'TENANT_CLOSED' ? 'tenant_closed' : 'tenant_not_provisioned',
      status: tenant.status,
    };
  if (input.kind === 'auto') {
    // Only amounts the parent was refused for (or more) wait; smaller auto top-ups go ahead.
    const shortfall = { since: parent.insufficientSince, refusedMicroUsd: parent.insufficientMicroUsd };
    if (shortfallHolds(shortfall, input.amountMicroUsd)) return { outcome: 'skipped', why: 'parent_insufficient' };
    if (await transfersMovedSince(tx, input.externalRef, input.balanceReadAt))
      return { outcome: 'skipped', why: 'balance_changed' };
  }
  const refusedBy = await capRefusing(tx, input, parent.maxPerDayMicroUsd);
  const state = refusedBy ? 'refused' : 'pending';
  const entry: AuditEntry = {
    ...audit,
    action: refusedBy ? 'transfer.cap_refused' : 'transfer.intent',
    externalRef: input.externalRef,
    subject: input.idempotencyKey,
    details: {
      amountMicroUsd: input.amountMicroUsd,
      purpose: input.purpose,
      kind: input.kind,
      callerKey: input.callerKey,
      requestedBy: input.requestedBy,
      reason: input.reason,
      ...(refusedBy ? { cap: refusedBy } : {}),
    },
  };
  const { rows } = await tx.query<TransferIntentRow>(
    `WITH changed AS (
       INSERT INTO transfer_intents (external_ref, purpose, amount_micro_usd, idempotency_key, state, attempts, kind,
         caller_key, requested_by, reason, reserved_on, failure_code)
       VALUES ($1::text, $2::text, $3::numeric, $4::text, $5::text, 1, $6::text, $7::text, $8::text, $9::text,
         (now() AT TIME ZONE 'UTC')::date, $10::text)
       RETURNING ${TRANSFER_INTENT_COLUMNS}
     ), audited AS (${auditFrom('changed', 11)})
     SELECT * FROM changed`,
    [
      input.externalRef,
      input.purpose,
      input.amountMicroUsd,
      input.idempotencyKey,
      state,
      input.kind,
      input.callerKey,
      input.requestedBy,
      input.reason,
      refusedBy ? capCode(refusedBy) : null,
      ...auditParams(entry),
    ],
  );
  // transferRefusal refused a tenant without a sub-account above.
  return { outcome: refusedBy ? 'refused' : 'reserved', intent: rows[0]!, subaccountId: tenant.subaccountId! };
}

/**
 * The top-up whose key drift found made on the platform and recorded under that key alone (the records had lost
 * it): this request is the one that made it (the key is a digest of the tenant and the caller's key), so it takes
 * the row as its own, made, and nothing is sent again.
 */
export async function claimRestored(
  tx: Queryable,
  input: Pick<
    ReserveTopUpInput,
    'externalRef' | 'callerKey' | 'purpose' | 'idempotencyKey' | 'kind' | 'requestedBy'
  > & {
    reason: string | null;
  },
): Promise<TransferIntentRow | undefined> {
  const { rows } = await tx.query<TransferIntentRow>(
    `UPDATE transfer_intents SET purpose = $3::text, caller_key = $4::text, kind = $5::text, requested_by = $6::text,
       reason = $7::text, reserved_on = (now() AT TIME ZONE 'UTC')::date, updated_at = now()
      WHERE external_ref = $1::text AND starts_with(idempotency_key, $2::text) AND kind = 'restored'
      RETURNING ${TRANSFER_INTENT_COLUMNS}`,
    [
      input.externalRef,
      transferKeyPrefixOf(input.idempotencyKey),
      input.purpose,
      input.callerKey,
      input.kind,
      input.requestedBy,
      input.reason,
    ],
  );
  return rows[0];
}

/**
 * With a parent cap, every reservation of the fleet takes the parent row FOR UPDATE: one at a time,
 * so the parent's sum cannot be raced. Without one, FOR SHARE: reservations run side by side (each
 * tenant's own row lock still orders that tenant's), and setting a cap waits for them to commit. A
 * cap set between the two reads is an error the activity's retry meets with the exclusive lock.
 */
async function lockFundingParent(tx: PoolClient) {
  const exclusive = (await getFundingParent(tx)).maxPerDayMicroUsd !== null;
  const parent = await getFundingParent(tx, { lock: exclusive ? 'update' : 'share' });
  if (!exclusive && parent.maxPerDayMicroUsd !== null)
    throw new Error('the parent daily cap was set during this reservation: retry');
  return parent;
}

function capCode(cap: CapName): string {
  return `CAP_${cap.toUpperCase()}`;
}

/** What the caps hold today (UTC) and this month: every top-up not failed for good. */
export async function capUsage(
  db: Pick<PoolClient, 'query'>,
  externalRef: string,
): Promise<{ tenantDay: bigint; tenantMonth: bigint; parentDay: bigint }> {
  const { rows } = await db.query<{ tenantDay: string; tenantMonth: string; parentDay: string }>(
    `WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS d)
     SELECT coalesce(sum(amount_micro_usd) FILTER (WHERE external_ref = $1::text AND reserved_on = today.d), 0)::text
       AS "tenantDay",
            coalesce(sum(amount_micro_usd) FILTER (WHERE external_ref = $1::text), 0)::text AS "tenantMonth",
            coalesce(sum(amount_micro_usd) FILTER (WHERE reserved_on = today.d), 0)::text AS "parentDay"
       FROM transfer_intents, today
      WHERE reserved_on >= date_trunc('month', today.d)::date
        AND (reserved_on = today.d OR external_ref = $1::text)
        AND state NOT IN ('failed', 'cancelled', 'refused')`,
    [externalRef],
  );
  const row = rows[0]!;
  return { tenantDay: BigInt(row.tenantDay), tenantMonth: BigInt(row.tenantMonth), parentDay: BigInt(row.parentDay) };
}

async function capRefusing(
  tx: PoolClient,
  input: ReserveTopUpInput,
  parentPerDay: string | null,
): Promise<CapName | null> {
  const policy = await findFundingPolicy(tx, input.externalRef);
  if (!policy && parentPerDay === null) return null;
  const usage = await capUsage(tx, input.externalRef);
  const amount = BigInt(input.amountMicroUsd);
  if (policy && usage.tenantDay + amount > BigInt(policy.maxPerDayMicroUsd)) return CapName.tenantDay;
  if (policy?.maxPerMonthMicroUsd && usage.tenantMonth + amount > BigInt(policy.maxPerMonthMicroUsd))
    return CapName.tenantMonth;
  if (parentPerDay !== null && usage.parentDay + amount > BigInt(parentPerDay)) return CapName.parentDay;
  return null;
}

/** An open transfer, or one that moved after the balance was read, makes that balance stale. */
async function transfersMovedSince(tx: PoolClient, externalRef: string, since: string | null): Promise<boolean> {
  const { rows } = await tx.query(
    `SELECT 1 FROM transfer_intents
      WHERE external_ref = $1::text AND (state IN ('pending', 'unknown', 'needs_operator') 
        OR ($2::timestamptz IS NOT NULL AND updated_at >= $2::timestamptz))
      LIMIT 1`,
    [externalRef, since],
  );
  return rows.length > 0;
}
