import { Context } from '@temporalio/activity';
import type { Queryable } from '../src/db/pool.js';
import { restoreOnboardingRecord } from '../src/db/tenants-store.js';
import {
  findTransferIntent,
  recordRestoredTransfer,
  type TransferIntentRow,
} from '../src/db/transfer-intents-store.js';
import { ONBOARDING_PURPOSE } from '../src/domain/onboarding.js';
import { FailureCode } from '../src/domain/failures.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, TenantRecordGone } from './failures.js';
import { isInitialFundingKey, subaccountCreateKey } from './idempotency-keys.js';

/**
 * The records went back in time under a running onboarding (docs/operations.md, "Restoring Postgres from a backup"):
 * a restore from a backup taken before this onboarding recorded its tenant. Its later steps (the funding, the first
 * key) would otherwise fail on the missing record forever (a foreign key) or fail a funded tenant.
 */

function workflowTypeOf(): string | undefined {
  try {
    return Context.current().info.workflowType;
  } catch {
    return undefined;
  }
}

/** A write refused because the tenant's record is gone (a row of its that names the tenant). */
export function isTenantRecordMissing(error: unknown): boolean {
  const pg = error as { code?: unknown; constraint?: unknown };
  return pg?.code === '23503' && typeof pg.constraint === 'string' && pg.constraint.endsWith('_external_ref_fkey');
}

/**
 * Writes the onboarding's tenant record again from what the run holds (its external ref, the sub-account it made)
 * and what the platform shows of that sub-account (its name, and the external ref that proves it is this tenant's),
 * re-reading the platform rather than starting afresh. Only an onboarding's step does this: anywhere else a missing
 * record is TENANT_NOT_FOUND, for the runbook's import. Returns whether this call wrote it (false: a sibling did).
 */
export async function restoreOnboardingTenant(
  deps: Pick<ActivityDeps, 'pool' | 'platform'>,
  input: { externalRef: string; subaccountId: string },
): Promise<boolean> {
  const notFound = (why: string) =>
    activityFailure(FailureCode.TENANT_NOT_FOUND, `no tenant ${input.externalRef} in our records (${why})`);
  if (workflowTypeOf() !== 'onboardTenant') throw notFound('not an onboarding: import it');
  const { subaccount } = await deps.platform.getSubaccount({ subaccountId: input.subaccountId });
  if (subaccount.externalRef !== input.externalRef)
    throw notFound(`sub-account ${input.subaccountId} does not show this external ref`);
  return restoreOnboardingRecord(
    deps.pool,
    {
      externalRef: input.externalRef,
      name: subaccount.name?.trim() || input.externalRef,
      subaccountId: input.subaccountId,
      createIdempotencyKey: subaccountCreateKey(input.externalRef),
    },
    {
      ...auditOrigin(),
      action: 'tenant.record_restored',
      externalRef: input.externalRef,
      subject: input.subaccountId,
      details: {
        reason: 'the records went back in time under this onboarding: written again from the run and the platform',
      },
    },
  );
}

/**
 * A write of a step that names its tenant (`write`), done again once restoreOnboardingTenant wrote the tenant's
 * record again, when the first try found the record gone. Outside an onboarding the record is not written again:
 * TENANT_NOT_FOUND, or with `gone: 'wait'` TenantRecordGone (the caller waits for the import).
 */
export async function withTenantRecord<T>(
  deps: Pick<ActivityDeps, 'pool' | 'platform'>,
  input: { externalRef: string; subaccountId: string },
  write: () => Promise<T>,
  gone: 'fail' | 'wait' = 'fail',
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!isTenantRecordMissing(error)) throw error;
    if (gone === 'wait' && workflowTypeOf() !== 'onboardTenant') throw new TenantRecordGone(input.externalRef);
    await restoreOnboardingTenant(deps, input);
    return write();
  }
}

/**
 * A transfer the platform shows under one of our keys that no intent records (the records lost it), recorded as made,
 * never sent again: the onboarding's funding with the purpose its key proves; any other under its key alone, which a
 * top-up of the same key claims (reserveTopUp). Undefined when a row of that key exists already.
 */
export async function recordLostTransfer(
  db: Queryable,
  externalRef: string,
  transfer: { id: string | null; idempotencyKey: string; amountMicroUsd: string; createdAt?: string | undefined },
): Promise<TransferIntentRow | undefined> {
  const initial =
    isInitialFundingKey(externalRef, transfer.idempotencyKey) &&
    !(await findTransferIntent(db, externalRef, ONBOARDING_PURPOSE));
  return recordRestoredTransfer(db, {
    externalRef,
    purpose: initial ? ONBOARDING_PURPOSE : `restored:${transfer.idempotencyKey}`,
    kind: initial ? 'initial' : 'restored',
    amountMicroUsd: transfer.amountMicroUsd,
    idempotencyKey: transfer.idempotencyKey,
    platformTransferId: transfer.id,
    createdAt: transfer.createdAt,
  });
}
