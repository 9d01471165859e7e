import type { Pool } from '../db/pool.js';
import { findTenant, TenantNotFoundError } from '../db/tenants-store.js';
import { findTransferIntent, type TransferIntentRow } from '../db/transfer-intents-store.js';
import { sameTopUpRequest, type TopUpRequestFields } from '../domain/top-up-input.js';
import { topUpPurpose } from '../domain/top-up-ids.js';
import { IdempotencyKeyReusedError } from './start-top-up.js';

/**
 * What our records already say about a top-up request, before anything starts (the gateway and
 * tenantctl): a key recorded with another amount or reason is refused, a recorded one answers from
 * the record, and a tenant that cannot take a transfer is refused — no run is started that was
 * bound to fail, no platform call is made.
 */
export class TopUpNotAllowedError extends Error {
  override name = 'TopUpNotAllowedError';
  constructor(
    readonly code: 'TENANT_CLOSED' | 'TENANT_NOT_PROVISIONED',
    message: string,
  ) {
    super(message);
  }
}

export const OPEN_TRANSFER_STATES: ReadonlySet<string> = new Set(['pending', 'unknown', 'needs_operator']);

/** The recorded intent of this key, or undefined when a run may start. Throws the refusals above. */
export async function precheckTopUp(
  pool: Pool,
  request: TopUpRequestFields & { externalRef: string; idempotencyKey: string },
): Promise<TransferIntentRow | undefined> {
  const tenant = await findTenant(pool, request.externalRef);
  if (!tenant) throw new TenantNotFoundError(request.externalRef);
  const recorded = await findRecordedTopUp(pool, request);
  if (recorded) return recorded;
  if (tenant.status === 'closing' || tenant.status === 'closed')
    throw new TopUpNotAllowedError(
      'TENANT_CLOSED',
      `tenant ${request.externalRef} is ${tenant.status}: it takes no new transfers`,
    );
  if (!tenant.subaccountId || !['active', 'suspended'].includes(tenant.status)) {
    throw new TopUpNotAllowedError(
      'TENANT_NOT_PROVISIONED',
      `tenant ${request.externalRef} is ${tenant.status}: top-ups need an onboarded (active or suspended) tenant`,
    );
  }
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
