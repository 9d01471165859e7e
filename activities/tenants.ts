import { appendAudit } from '../src/db/audit-store.js';
import { withTransaction } from '../src/db/pool.js';
import { emitEvent } from '../src/db/events-store.js';
import {
  getTenant,
  recordOnboardingAttempt,
  recordSubaccountAudited,
  setTenantStatus,
  transitionTenantAudited,
} from '../src/db/tenants-store.js';
import { isClosing, type TenantStatus } from '../src/domain/tenant-rules.js';
import { listTransferIntents, updateTransferIntent } from '../src/db/transfer-intents-store.js';
import { PlatformIdempotencyConflictError, type SubaccountRecord } from '../src/platform/index.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';
import { subaccountCreateKey } from './idempotency-keys.js';
import { scanForExternalRef, scanInActivity } from './subaccount-scan.js';
import { FailureCode } from '../src/domain/failures.js';

export interface EnsureSubaccountInput {
  externalRef: string;
  name: string;
}
export interface EnsureSubaccountResult {
  subaccountId: string;
  /** How we got it: created now, found in our records, or found on the platform after a lost response. */
  source: 'created' | 'recorded' | 'adopted';
  requestId: string | null;
}

/**
 * The onboarding's step (new runs): the lookup after an ambiguous create is not done here but by the
 * regular activity `findSubaccountByExternalRef` (it may take thousands of pages), whose answer comes
 * back in `found`.
 */
export interface EnsureSubaccountStepInput extends EnsureSubaccountInput {
  found?: { subaccountId: string | null; pagesScanned: number } | undefined;
}
export type EnsureSubaccountStepResult =
  (EnsureSubaccountResult & { lookupNeeded?: undefined }) | { lookupNeeded: true; reason: string };

export interface TenantRefInput {
  externalRef: string;
}

export function createTenantActivities(deps: ActivityDeps) {
  const { pool, platform, logger } = deps;

  /** Looks the tenant up on the platform by our external ref (the parent keeps it unique), every page, first match. */
  async function findOnPlatform(externalRef: string): Promise<SubaccountRecord | undefined> {
    const { match, refsNotShown } = await scanForExternalRef(platform, externalRef);
    if (refsNotShown)
      logger.warn(
        { externalRef },
        'platform lists sub-accounts without externalRef: cannot look up by external ref, ' +
          'relying on the idempotency key',
      );
    return match;
  }

  async function adopt(
    externalRef: string,
    subaccountId: string,
    source: EnsureSubaccountResult['source'],
    requestId: string | null,
  ) {
    await recordSubaccountAudited(pool, externalRef, subaccountId, {
      ...auditOrigin(),
      action: `tenant.${source}`,
      externalRef,
      subject: subaccountId,
      details: { requestId },
    });
    return { subaccountId, source, requestId };
  }

  /**
   * Records ownership (external ref unique), then creates the sub-account under a key derived from
   * the external ref. After an earlier attempt that may have reached the platform, the tenant is
   * looked up by external ref BEFORE any new create, in case the platform forgot the key.
   */
  async function ensure(
    input: EnsureSubaccountStepInput,
    lookup: 'inline' | 'separate',
  ): Promise<EnsureSubaccountStepResult> {
    const { externalRef, name } = input;
    const { row, inserted } = await recordOnboardingAttempt(
      pool,
      { externalRef, name, createIdempotencyKey: subaccountCreateKey(externalRef) },
      auditOrigin(),
    );
    if (!inserted && row.name !== name) {
      throw activityFailure(
        FailureCode.EXTERNAL_REF_CONFLICT,
        `external ref ${externalRef} is already recorded for a tenant with another name`,
      );
    }
    if (isClosing(row.status)) {
      throw activityFailure(
        FailureCode.TENANT_CLOSED,
        `tenant ${externalRef} is ${row.status}: it cannot be onboarded again`,
      );
    }
    if (row.subaccountId) return { subaccountId: row.subaccountId, source: 'recorded', requestId: null };
    if (input.found?.subaccountId) return adopt(externalRef, input.found.subaccountId, 'adopted', null);

    // Counted when recorded: more than one means an earlier attempt may have reached the platform.
    if (row.createAttempts > 1 && input.found === undefined) {
      if (lookup === 'separate')
        return { lookupNeeded: true, reason: 'an earlier create attempt may have reached the platform' };
      const found = await findOnPlatform(externalRef);
      if (found) return adopt(externalRef, found.id, 'adopted', null);
    }
    try {
      const created = await platform.createSubaccount({ name, externalRef, idempotencyKey: row.createIdempotencyKey });
      return adopt(externalRef, created.subaccount.id, 'created', created.requestId ?? null);
    } catch (error) {
      // A platform that answers a replayed key with a conflict instead of the original: look it up.
      if (error instanceof PlatformIdempotencyConflictError) {
        if (input.found !== undefined) {
          throw activityFailure(
            FailureCode.SUBACCOUNT_UNRECONCILED,
            `the platform says the create key of ${externalRef} was used, but none of its ` +
              `sub-accounts (${input.found.pagesScanned} pages scanned) carries that external ` +
              `ref; check the platform console`,
          );
        }
        if (lookup === 'separate')
          return {
            lookupNeeded: true,
            reason: `the platform answered the create's idempotency key with ${error.platformCode ?? 'a conflict'}`,
          };
        const found = await findOnPlatform(externalRef);
        if (found) return adopt(externalRef, found.id, 'adopted', error.requestId ?? null);
      }
      throw error;
    }
  }

  return {
    /** Records ownership, then creates or adopts the sub-account; a needed lookup runs inline (older runs, benches). */
    ensureSubaccount: boundary(async (input: EnsureSubaccountInput): Promise<EnsureSubaccountResult> => {
      const result = await ensure(input, 'inline');
      if (result.lookupNeeded) throw new Error('unreachable: an inline ensure never asks for a lookup');
      return result;
    }),

    /** The onboarding's step: asks for the scan (a regular activity) instead of running it, then uses its answer. */
    ensureSubaccountStep: boundary((input: EnsureSubaccountStepInput): Promise<EnsureSubaccountStepResult> =>
      ensure(input, 'separate'),
    ),

    /** The scan after an ambiguous create, heartbeating each page and resuming from the last one on retry. */
    findSubaccountByExternalRef: boundary(
      async (input: { externalRef: string }): Promise<{ subaccountId: string | null; pagesScanned: number }> => {
        const { match, pagesScanned, refsNotShown } = await scanInActivity(platform, input.externalRef);
        if (refsNotShown)
          logger.warn(
            { externalRef: input.externalRef },
            'platform lists sub-accounts without externalRef: cannot look up by external ref, ' +
              'relying on the idempotency key',
          );
        return { subaccountId: match?.id ?? null, pagesScanned };
      },
    ),

    markTenantActive: boundary(async (input: TenantRefInput & { subaccountId?: string }): Promise<void> => {
      // Never over a suspension or a close that started meanwhile.
      // The move, its audit row and (when it moved) its event, in one statement.
      const result = await transitionTenantAudited(
        pool,
        input.externalRef,
        ['creating', 'created'],
        'active',
        { ...auditOrigin(), action: 'tenant.activated', externalRef: input.externalRef },
        {
          type: 'tenant.onboarded',
          externalRef: input.externalRef,
          data: { externalRef: input.externalRef, status: 'active' },
        },
        input.subaccountId,
      );
      if (!result)
        throw activityFailure(
          FailureCode.TENANT_NOT_FOUND,
          `no tenant with external ref ${input.externalRef} in our records`,
        );
      if (!result.moved && result.status !== 'active') {
        throw activityFailure(
          FailureCode.TENANT_CLOSED,
          `tenant ${input.externalRef} became ${result.status} during onboarding`,
        );
      }
    }),

    /**
     * After a cancel or a failure: the records say so, and a transfer that never left `pending` is
     * cancelled. An `unknown` transfer is left as it is: it must still be reconciled.
     */
    markOnboardingStopped: boundary(
      async (
        input: TenantRefInput & { name: string; outcome: 'cancelled' | 'failed'; reason: string },
      ): Promise<void> => {
        await withTransaction(pool, async (tx) => {
          const tenant = await getTenant(tx, input.externalRef).catch(() => undefined);
          // Only this onboarding's own record (same name), and never a settled one.
          if (
            !tenant ||
            tenant.name !== input.name ||
            ['active', 'closed', 'closing', 'suspended'].includes(tenant.status)
          )
            return;
          for (const intent of await listTransferIntents(tx, input.externalRef)) {
            if (intent.state === 'pending')
              await updateTransferIntent(tx, intent.id, ['pending'], { state: 'cancelled', resolution: input.outcome });
          }
          await setTenantStatus(tx, input.externalRef, input.outcome satisfies TenantStatus);
          if (input.outcome === 'failed' && tenant.status !== 'failed')
            await emitEvent(tx, {
              type: 'tenant.onboarding_failed',
              externalRef: input.externalRef,
              data: {
                externalRef: input.externalRef,
                subaccountId: tenant.subaccountId,
                status: 'failed',
                from: tenant.status,
                reason: input.reason,
              },
            });
          await appendAudit(tx, {
            ...auditOrigin(),
            action: `onboarding.${input.outcome}`,
            externalRef: input.externalRef,
            details: { reason: input.reason },
          });
        });
      },
    ),
  };
}
