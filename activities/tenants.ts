import { appendAudit } from '../src/db/audit-store.js';
import { withTransaction } from '../src/db/pool.js';
import { getTenant, recordOnboardingAttempt, recordSubaccountAudited, setTenantStatus, transitionTenantAudited, type TenantStatus } from '../src/db/tenants-store.js';
import { listTransferIntents, updateTransferIntent } from '../src/db/transfer-intents-store.js';
import { PlatformIdempotencyConflictError, type SubaccountRecord } from '../src/platform/index.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { boundary, definiteFailure, OrchestratorErrorCode } from './failures.js';
import { subaccountCreateKey } from './idempotency-keys.js';

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

export interface TenantRefInput {
  externalRef: string;
}

export function createTenantActivities(deps: ActivityDeps) {
  const { pool, platform, logger } = deps;

  /** Looks the tenant up on the platform by our external ref (the parent keeps it unique). */
  async function findOnPlatform(externalRef: string): Promise<SubaccountRecord | undefined> {
    const { subaccounts } = await platform.listSubaccounts();
    if (subaccounts.length > 0 && subaccounts.every((s) => s.externalRef === undefined)) {
      logger.warn({ externalRef }, 'platform lists sub-accounts without externalRef: cannot look up by external ref, relying on the idempotency key');
    }
    const matches = subaccounts.filter((s) => s.externalRef === externalRef && s.status !== 'closed');
    if (matches.length > 1) {
      throw definiteFailure(OrchestratorErrorCode.DUPLICATE_SUBACCOUNTS, `the platform has ${matches.length} sub-accounts with external ref ${externalRef}; an operator must choose`, {
        subaccountIds: matches.map((m) => m.id),
      });
    }
    return matches[0];
  }

  async function adopt(externalRef: string, subaccountId: string, source: EnsureSubaccountResult['source'], requestId: string | null) {
    await recordSubaccountAudited(pool, externalRef, subaccountId, { ...auditOrigin(), action: `tenant.${source}`, externalRef, subject: subaccountId, details: { requestId } });
    return { subaccountId, source, requestId };
  }

  return {
    /**
     * Records ownership (external ref unique), then creates the sub-account under a key derived from
     * the external ref. After an earlier attempt that may have reached the platform, the tenant is
     * looked up by external ref BEFORE any new create, in case the platform forgot the key.
     */
    ensureSubaccount: boundary(async (input: EnsureSubaccountInput): Promise<EnsureSubaccountResult> => {
      const { externalRef, name } = input;
      const { row, inserted } = await recordOnboardingAttempt(pool, { externalRef, name, createIdempotencyKey: subaccountCreateKey(externalRef) }, auditOrigin());
      if (!inserted && row.name !== name) {
        throw definiteFailure(OrchestratorErrorCode.EXTERNAL_REF_CONFLICT, `external ref ${externalRef} is already recorded for a tenant with another name`);
      }
      if (row.status === 'closing' || row.status === 'closed') {
        throw definiteFailure(OrchestratorErrorCode.TENANT_CLOSED, `tenant ${externalRef} is ${row.status}: it cannot be onboarded again`);
      }
      if (row.subaccountId) return { subaccountId: row.subaccountId, source: 'recorded', requestId: null };

      // Counted when recorded: more than one means an earlier attempt may have reached the platform.
      if (row.createAttempts > 1) {
        const found = await findOnPlatform(externalRef);
        if (found) return adopt(externalRef, found.id, 'adopted', null);
      }
      try {
        const created = await platform.createSubaccount({ name, externalRef, idempotencyKey: row.createIdempotencyKey });
        return adopt(externalRef, created.subaccount.id, 'created', created.requestId ?? null);
      } catch (error) {
        // A platform that answers a replayed key with a conflict instead of the original: look it up.
        if (error instanceof PlatformIdempotencyConflictError) {
          const found = await findOnPlatform(externalRef);
          if (found) return adopt(externalRef, found.id, 'adopted', error.requestId ?? null);
        }
        throw error;
      }
    }),

    markTenantActive: boundary(async (input: TenantRefInput): Promise<void> => {
      // Never over a suspension or a close that started meanwhile.
      const result = await transitionTenantAudited(pool, input.externalRef, ['creating', 'created'], 'active', { ...auditOrigin(), action: 'tenant.activated', externalRef: input.externalRef });
      if (!result) throw definiteFailure(OrchestratorErrorCode.TENANT_NOT_FOUND, `no tenant with external ref ${input.externalRef} in our records`);
      if (!result.moved && result.status !== 'active') {
        throw definiteFailure(OrchestratorErrorCode.TENANT_CLOSED, `tenant ${input.externalRef} became ${result.status} during onboarding`);
      }
    }),

    /**
     * After a cancel or a failure: the records say so, and a transfer that never left `pending` is
     * cancelled. An `unknown` transfer is left as it is: it must still be reconciled.
     */
    markOnboardingStopped: boundary(async (input: TenantRefInput & { name: string; outcome: 'cancelled' | 'failed'; reason: string }): Promise<void> => {
      await withTransaction(pool, async (tx) => {
        const tenant = await getTenant(tx, input.externalRef).catch(() => undefined);
        // Only this onboarding's own record (same name), and never a settled one.
        if (!tenant || tenant.name !== input.name || ['active', 'closed', 'closing', 'suspended'].includes(tenant.status)) return;
        for (const intent of await listTransferIntents(tx, input.externalRef)) {
          if (intent.state === 'pending') await updateTransferIntent(tx, intent.id, ['pending'], { state: 'cancelled', resolution: input.outcome });
        }
        await setTenantStatus(tx, input.externalRef, input.outcome satisfies TenantStatus);
        await appendAudit(tx, { ...auditOrigin(), action: `onboarding.${input.outcome}`, externalRef: input.externalRef, details: { reason: input.reason } });
      });
    }),
  };
}
