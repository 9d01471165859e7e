import type { Pool } from '../../db/pool.js';
import { findTenant, TenantNotFoundError } from '../../db/tenants-store.js';
import { findTransferIntent, listTransferIntents, type TransferIntentRow } from '../../db/transfer-intents-store.js';
import type { PlatformClient } from '../../platform/index.js';
import { transferNameOf } from '../../domain/onboarding.js';

/**
 * A tenant's ledger as we recorded it (every transfer intent: initial funding, top-ups, automatic
 * top-ups) and the wallet compared with it. Shared by `tenantctl transfers|wallet` and
 * `GET /v1/tenants/:ref/transfers`. No secret is in any of it.
 */
export type { TransferIntentRow };

/** A tenant's transfer intent of one purpose (a top-up's is `top-up:<key>`), or undefined. */
export const findTransferIntentOf = findTransferIntent;

export interface LedgerEntry {
  /** initial | top-up | auto */
  purpose: string;
  amountMicroUsd: string;
  state: string;
  /** The caller's Idempotency-Key (top-ups); null for the initial funding. */
  idempotencyKey: string | null;
  /** The key the platform saw (header and body). */
  platformIdempotencyKey: string;
  platformTransferId: string | null;
  requestedBy: string | null;
  reason: string | null;
  /** Why it failed or was refused (e.g. CAP_TENANT_PER_DAY), or null. */
  failureCode: string | null;
  /** How an unknown outcome was settled (wallet-transfer-list, operator:…), or null. */
  resolution: string | null;
  /** The intent's own name, as `tenantctl resolve-transfer --close --purpose` takes it. */
  intent: string;
  createdAt: string;
  updatedAt: string;
}

export function ledgerEntryOf(row: TransferIntentRow): LedgerEntry {
  return {
    purpose: row.kind,
    amountMicroUsd: row.amountMicroUsd,
    state: row.state,
    idempotencyKey: row.callerKey,
    platformIdempotencyKey: row.idempotencyKey,
    platformTransferId: row.platformTransferId,
    requestedBy: row.requestedBy ?? (row.kind === 'initial' ? 'onboarding' : null),
    reason: row.reason,
    failureCode: row.failureCode,
    resolution: row.resolution,
    intent: transferNameOf(row.purpose),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function getTransferLedger(
  pool: Pool,
  externalRef: string,
): Promise<{ externalRef: string; transfers: LedgerEntry[]; succeededMicroUsd: string }> {
  if (!(await findTenant(pool, externalRef))) throw new TenantNotFoundError(externalRef);
  const rows = await listTransferIntents(pool, externalRef);
  return { externalRef, transfers: rows.map(ledgerEntryOf), succeededMicroUsd: sumSucceeded(rows).toString() };
}

function sumSucceeded(rows: readonly TransferIntentRow[]): bigint {
  return rows.filter((r) => r.state === 'succeeded').reduce((sum, r) => sum + BigInt(r.amountMicroUsd), 0n);
}

export interface WalletComparison {
  externalRef: string;
  subaccountId: string;
  /** The platform's balance, or null when it did not show one. */
  balanceMicroUsd: string | null;
  /** What our ledger says went in (succeeded transfers). */
  recordedInMicroUsd: string;
  /** balance − recorded in; negative is the tenant's spending, positive is money we did not put in. */
  differenceMicroUsd: string | null;
  /** Transfers on the wallet under keys we never used (when the platform lists them). */
  unrecordedTransfers: Array<{ id: string | null; amountMicroUsd: string | null; idempotencyKey: string | null }>;
  /** Our succeeded transfers the wallet's list does not show (null when it shows no list). */
  missingFromWallet: string[] | null;
  /** The drift kind this is (the one `tenantctl drift` reports), or null when the two agree. */
  drift: 'balance_unexplained' | null;
}

/** Reads the wallet and compares it with our ledger, the way drift's balance_unexplained does. */
export async function compareWallet(
  deps: { pool: Pool; platform: PlatformClient },
  externalRef: string,
): Promise<WalletComparison> {
  const tenant = await findTenant(deps.pool, externalRef);
  if (!tenant) throw new TenantNotFoundError(externalRef);
  if (!tenant.subaccountId) throw new Error(`tenant ${externalRef} has no sub-account yet: there is no wallet to read`);
  const rows = await listTransferIntents(deps.pool, externalRef);
  const { wallet } = await deps.platform.getWallet({ subaccountId: tenant.subaccountId });
  const recordedIn = sumSucceeded(rows);
  const balance =
    wallet.balanceKnown && wallet.balanceMicroUsd !== null && wallet.balanceMicroUsd !== undefined
      ? BigInt(wallet.balanceMicroUsd)
      : null;
  const ourKeys = new Set(rows.map((r) => r.idempotencyKey));
  const listed = wallet.transfers ?? null;
  const unrecorded = (listed ?? []).filter((t) => t.idempotencyKey === undefined || !ourKeys.has(t.idempotencyKey));
  const listedKeys = new Set((listed ?? []).map((t) => t.idempotencyKey));
  const difference = balance === null ? null : balance - recordedIn;
  return {
    externalRef,
    subaccountId: tenant.subaccountId,
    balanceMicroUsd: balance === null ? null : balance.toString(),
    recordedInMicroUsd: recordedIn.toString(),
    differenceMicroUsd: difference === null ? null : difference.toString(),
    unrecordedTransfers: unrecorded.map((t) => ({
      id: t.id ?? null,
      amountMicroUsd: t.amountMicroUsd ?? null,
      idempotencyKey: t.idempotencyKey ?? null,
    })),
    missingFromWallet: listed
      ? rows.filter((r) => r.state === 'succeeded' && !listedKeys.has(r.idempotencyKey)).map((r) => r.idempotencyKey)
      : null,
    drift: (difference !== null && difference > 0n) || unrecorded.length > 0 ? 'balance_unexplained' : null,
  };
}
