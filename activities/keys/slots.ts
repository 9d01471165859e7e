import { appendAudit } from '../../src/db/audit-store.js';
import { withTransaction } from '../../src/db/pool.js';
import {
  findActiveKey,
  findKeyRecord,
  findMaxGeneration,
  markCreatingKeyFailed,
  markKeyRevoked,
} from '../../src/db/tenant-keys-store.js';
import { findTenant } from '../../src/db/tenants-store.js';
import { FailureCode } from '../../src/domain/failures.js';
import { PlatformNotFoundError } from '../../src/platform/index.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { activityFailure, boundary, assertTenantRule } from '../failures.js';
import { keyIssueRefusal } from '../../src/domain/tenant-rules.js';

/**
 * Keys per workload and environment (contract, authentication rule 7): one slot = one named key of a tenant, with
 * generations like the `default` slot that onboarding issues. Issue and revoke of a slot's key outside rotation.
 */
export type BeginSlotIssueResult =
  | { state: 'exists'; generation: number; keyId: string; fingerprint: string }
  | { state: 'issue'; subaccountId: string; generation: number };

export interface SlotKeyTarget {
  subaccountId: string;
  generation: number;
  keyId: string;
  fingerprint: string | null;
}

export function createKeySlotActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;

  async function openTenant(externalRef: string): Promise<{ subaccountId: string }> {
    const tenant = await findTenant(pool, externalRef);
    assertTenantRule(keyIssueRefusal, externalRef, tenant);
    return { subaccountId: tenant.subaccountId };
  }

  return {
    /**
     * Where an issue of a slot's key starts: the slot's active key when it has one (issuing twice gives one key),
     * else the generation to create — the unfinished one of an earlier run, or the next.
     */
    beginSlotKeyIssue: boundary(async (input: { externalRef: string; slot: string }): Promise<BeginSlotIssueResult> => {
      const { subaccountId } = await openTenant(input.externalRef);
      const active = await findActiveKey(pool, input.externalRef, input.slot);
      if (active?.platformKeyId)
        return {
          state: 'exists',
          generation: active.generation,
          keyId: active.platformKeyId,
          fingerprint: active.fingerprint ?? '',
        };
      const max = await findMaxGeneration(pool, input.externalRef, input.slot);
      const newest = max > 0 ? await findKeyRecord(pool, input.externalRef, input.slot, max) : undefined;
      return { state: 'issue', subaccountId, generation: newest?.status === 'creating' ? max : max + 1 };
    }),

    /** An issue given up at the key limit: the record that never got its key is marked failed. */
    abandonSlotKeyIssue: boundary(
      async (input: { externalRef: string; slot: string; generation: number; actor: string; reason: string }) => {
        const record = await findKeyRecord(pool, input.externalRef, input.slot, input.generation);
        await withTransaction(pool, async (tx) => {
          if (record?.status === 'creating') await markCreatingKeyFailed(tx, record.id);
          await appendAudit(tx, {
            ...auditOrigin(),
            actor: input.actor,
            action: 'key.issue_aborted',
            externalRef: input.externalRef,
            subject: input.slot,
            details: { slot: input.slot, generation: input.generation, reason: input.reason },
          });
        });
      },
    ),

    /** The slot's active key, which a revoke targets. */
    findSlotKeyToRevoke: boundary(async (input: { externalRef: string; slot: string }): Promise<SlotKeyTarget> => {
      const tenant = await findTenant(pool, input.externalRef);
      if (!tenant?.subaccountId)
        throw activityFailure(
          FailureCode.TENANT_NOT_FOUND,
          `no provisioned tenant ${input.externalRef} in our records`,
        );
      const active = await findActiveKey(pool, input.externalRef, input.slot);
      if (!active?.platformKeyId)
        throw activityFailure(
          FailureCode.NO_ACTIVE_KEY,
          `tenant ${input.externalRef} has no active key in slot ${input.slot}`,
        );
      return {
        subaccountId: tenant.subaccountId,
        generation: active.generation,
        keyId: active.platformKeyId,
        fingerprint: active.fingerprint,
      };
    }),

    /** Revokes a slot's key on the platform and in our records, audited with who and why. Idempotent. */
    revokeSlotKey: boundary(
      async (input: {
        externalRef: string;
        slot: string;
        generation: number;
        subaccountId: string;
        actor: string;
        why: string;
        forced: boolean;
      }): Promise<{ keyId: string; result: 'revoked' | 'already_gone' }> => {
        const record = await findKeyRecord(pool, input.externalRef, input.slot, input.generation);
        if (!record?.platformKeyId)
          throw activityFailure(
            FailureCode.NO_ACTIVE_KEY,
            `no key ${input.slot} generation ${input.generation} of ${input.externalRef}`,
          );
        let result: 'revoked' | 'already_gone' = 'already_gone';
        if (record.status !== 'revoked') {
          try {
            await platform.revokeTenantKey({ subaccountId: input.subaccountId, keyId: record.platformKeyId });
            result = 'revoked';
          } catch (error) {
            if (!(error instanceof PlatformNotFoundError)) throw error;
          }
        }
        await withTransaction(pool, async (tx) => {
          const updated = await markKeyRevoked(tx, record.id);
          if (updated && record.status !== 'revoked')
            await appendAudit(tx, {
              ...auditOrigin(),
              actor: input.actor,
              action: input.forced ? 'key.revoked_forced' : 'key.revoked',
              externalRef: input.externalRef,
              subject: record.platformKeyId,
              details: { slot: input.slot, generation: input.generation, why: input.why, forced: input.forced },
            });
        });
        return { keyId: record.platformKeyId!, result };
      },
    ),
  };
}
