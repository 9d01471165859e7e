import { getFundingParent } from '../../db/funding-store.js';
import type { Pool } from '../../db/pool.js';
import { shortfallDetail, shortfallHolds } from '../../domain/parent-shortfall.js';
import { assertWithinTransferLimit } from '../../domain/transfer-limit.js';
import type { Client } from '@temporalio/client';
import { findTenant, getTenant, TenantNotFoundError } from '../../db/tenants-store.js';
import { holdIfRecordsBehindRuns } from './restore-witness.js';
import { findTransferIntent, type TransferIntentRow } from '../../db/transfer-intents-store.js';
import { sameTopUpRequest, type TopUpRequestFields } from '../../domain/top-up-input.js';
import { topUpPurpose } from '../../domain/top-up-ids.js';
import { transferKey } from '../../domain/transfer-keys.js';
import { claimRestored } from '../../db/top-ups-store.js';
import { assertTenantAllows, transferRefusal } from '../../domain/tenant-rules.js';
import { IdempotencyKeyReusedError } from './start-top-up.js';

/**
 * What our records already say about a top-up request, before anything starts (the gateway and
 * tenantctl): an amount above TRANSFER_MAX_MICRO_USD is invalid input, a key recorded with another
 * amount or reason is refused, a recorded one answers from the record, a tenant that cannot take a
 * transfer is refused (TenantRefusedError, the rule transferRefusal), and an amount the parent was
 * already refused (INSUFFICIENT_BALANCE) or less is refused (TopUpNotAllowedError) — no run is started
 * that was bound to fail, no platform call is made.
 */
export class TopUpNotAllowedError extends Error {
  override name = 'TopUpNotAllowedError';
  constructor(
    readonly code: 'PARENT_INSUFFICIENT_BALANCE',
    message: string,
  ) {
    super(message);
  }
}

export const OPEN_TRANSFER_STATES: ReadonlySet<string> = new Set(['pending', 'unknown', 'needs_operator']);

/**
 * The recorded intent of this key, or undefined when a run may start. Throws the refusals above
 * (InvalidInputError for an amount above `maxTransferMicroUsd`, absent: its default).
 */
export async function precheckTopUp(
  pool: Pool,
  request: TopUpRequestFields & { externalRef: string; idempotencyKey: string },
  options: {
    maxTransferMicroUsd?: string | undefined;
    /** Temporal, the witness of a restore of the records (restore-witness.ts), and who asks (the hold's actor). */
    witness?: { client: Client; actor: string };
  } = {},
): Promise<TransferIntentRow | undefined> {
  assertWithinTransferLimit({ amountMicroUsd: request.amountMicroUsd }, options.maxTransferMicroUsd);
  const tenant = await findTenant(pool, request.externalRef);
  if (!tenant) throw new TenantNotFoundError(request.externalRef);
  const recorded = await findRecordedTopUp(pool, request);
  if (recorded) return recorded;
  assertTenantAllows(transferRefusal, tenant);
  if (
    options.witness &&
    (await holdIfRecordsBehindRuns(pool, options.witness.client, tenant.externalRef, options.witness.actor))
  )
    assertTenantAllows(transferRefusal, await getTenant(pool, tenant.externalRef));
  const parent = await getFundingParent(pool);
  const shortfall = { since: parent.insufficientSince, refusedMicroUsd: parent.insufficientMicroUsd };
  if (shortfallHolds(shortfall, request.amountMicroUsd))
    throw new TopUpNotAllowedError('PARENT_INSUFFICIENT_BALANCE', shortfallDetail(shortfall, request.amountMicroUsd));
  return undefined;
}

/** The intent recorded under this key (checked to be the same request), or undefined. */
export async function findRecordedTopUp(
  pool: Pool,
  request: TopUpRequestFields & { externalRef: string; idempotencyKey: string },
): Promise<TransferIntentRow | undefined> {
  const row = await findTransferIntent(pool, request.externalRef, topUpPurpose(request.idempotencyKey));
  if (row && !sameTopUpRequest(row, request)) throw new IdempotencyKeyReusedError(request.idempotencyKey);
  return row;
}

/**
 * The top-up of this key that drift recorded again from the wallet after a restore of the records, when the run of
 * the key ended before the restore (so it answers with nothing recorded): taken as this request's record, as a new
 * run of the key takes it (reserveTopUp). Nothing is sent again. Undefined when there is none.
 */
export async function claimRestoredTopUp(
  pool: Pool,
  request: TopUpRequestFields & { externalRef: string; idempotencyKey: string; requestedBy: string },
): Promise<TransferIntentRow | undefined> {
  const purpose = topUpPurpose(request.idempotencyKey);
  const row = await claimRestored(pool, {
    externalRef: request.externalRef,
    callerKey: request.idempotencyKey,
    purpose,
    idempotencyKey: transferKey(request.externalRef, purpose, 1),
    kind: 'top-up',
    requestedBy: request.requestedBy,
    reason: request.reason ?? null,
  });
  if (row && !sameTopUpRequest(row, request)) throw new IdempotencyKeyReusedError(request.idempotencyKey);
  return row;
}
