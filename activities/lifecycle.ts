import { createHash } from 'node:crypto';
import { resumeFloorFor } from '../src/db/plan-state.js';
import { appendAudit } from '../src/db/audit-store.js';
import { findScheduledClose } from '../src/db/close-schedules-store.js';
import { withTransaction } from '../src/db/pool.js';
import { emitEvent } from '../src/db/events-store.js';
import type { EventType } from '../src/domain/events.js';
import { listKeyRecords, markCreatingKeyFailed, markKeyRevoked } from '../src/db/tenant-keys-store.js';
import {
  findTenant,
  lockTenantStatus,
  markTenantClosed,
  transitionTenant,
  type TenantRow,
} from '../src/db/tenants-store.js';
import { resumeBalanceRefusal, resumeRefusal, suspendRefusal, type TenantStatus } from '../src/domain/tenant-rules.js';
import { PlatformNotFoundError } from '../src/platform/index.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';
import { FailureCode } from '../src/domain/failures.js';

/**
 * Suspend, resume and the steps of a close. Every customer-supplied external ref is mapped through
 * our ownership records before its sub-account id is used anywhere (X-Service-Subaccount included):
 * an unknown ref fails here, before any platform call.
 */
export interface LifecycleInput {
  externalRef: string;
  reason: string;
  operator: string;
  /** The run that asks: lifecycle idempotency keys are per run, so a retry repeats, a new run acts anew. */
  runKey: string;
}

export function lifecycleKey(action: string, externalRef: string, runKey: string): string {
  return `tpo-${action}-${createHash('sha256')
    .update(JSON.stringify([action, externalRef, runKey]))
    .digest('hex')
    .slice(0, 32)}`;
}

export function createLifecycleActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;

  async function ownedTenant(externalRef: string): Promise<TenantRow & { subaccountId: string }> {
    const tenant = await findTenant(pool, externalRef);
    if (!tenant?.subaccountId) {
      throw activityFailure(
        FailureCode.TENANT_NOT_FOUND,
        `no tenant with external ref ${externalRef} (and a sub-account) in our records`,
      );
    }
    return tenant as TenantRow & { subaccountId: string };
  }

  /** Moves the status and writes its event in one transaction; a repeat (already there) writes none. */
  const transitionWithEvent = (
    externalRef: string,
    from: readonly TenantStatus[],
    to: TenantStatus,
    reason: string,
    type: EventType,
    data: Record<string, unknown>,
  ) =>
    withTransaction(pool, async (tx) => {
      const before = await lockTenantStatus(tx, externalRef);
      const moved = await transitionTenant(tx, externalRef, from, to, reason);
      if (moved && before !== to)
        await emitEvent(tx, { type, externalRef, data: { externalRef, status: to, from: before, reason, ...data } });
    });

  const audit = (
    externalRef: string,
    action: string,
    subject: string | null,
    details: Record<string, unknown>,
    operator?: string,
  ) =>
    appendAudit(pool, {
      ...auditOrigin(),
      ...(operator ? { actor: `operator:${operator}` } : {}),
      action,
      externalRef,
      subject,
      details,
    });

  return {
    suspendTenantOnPlatform: boundary(
      async (input: LifecycleInput): Promise<{ subaccountId: string; status: string }> => {
        const tenant = await ownedTenant(input.externalRef);
        // The starters' rule, again for a run started elsewhere (the Web UI) or a close that began since.
        const refused = suspendRefusal(tenant);
        if (refused) throw activityFailure(refused.code, refused.message);
        const result = await platform.suspendSubaccount({
          subaccountId: tenant.subaccountId,
          idempotencyKey: lifecycleKey('suspend', input.externalRef, input.runKey),
        });
        await transitionWithEvent(
          input.externalRef,
          ['active', 'created', 'suspended', 'failed', 'cancelled'],
          'suspended',
          input.reason,
          'tenant.suspended',
          { subaccountId: tenant.subaccountId, operator: input.operator },
        );
        await audit(
          input.externalRef,
          'tenant.suspended',
          tenant.subaccountId,
          { reason: input.reason, requestId: result.requestId ?? null },
          input.operator,
        );
        return { subaccountId: tenant.subaccountId, status: 'suspended' };
      },
    ),

    /** The review the contract asks for: a reason (checked by the workflow) and a balance floor. */
    resumeTenantOnPlatform: boundary(
      async (input: LifecycleInput): Promise<{ subaccountId: string; balanceMicroUsd: string | null }> => {
        const tenant = await ownedTenant(input.externalRef);
        // The starters' rule, again for a run started elsewhere (the Web UI) or a close that began since.
        const scheduled = await findScheduledClose(pool, input.externalRef);
        const refused = resumeRefusal({ ...tenant, scheduledCloseAt: scheduled?.closeAt ?? null });
        if (refused) throw activityFailure(refused.code, refused.message);
        // A tenant on a plan that declares a floor resumes by it; every other by the server's setting (the
        // starter's rule, resumeBalanceRefusal, read here with the worker's setting and the balance now).
        const floor = await resumeFloorFor(pool, tenant, deps.lifecycle?.resumeBalanceFloorMicroUsd);
        const { wallet } = await platform.getWallet({ subaccountId: tenant.subaccountId });
        const poor = resumeBalanceRefusal({
          ...tenant,
          ...floor,
          balanceMicroUsd: wallet.balanceKnown ? wallet.balanceMicroUsd! : null,
        });
        if (poor) throw activityFailure(poor.code, poor.message);
        const result = await platform.resumeSubaccount({
          subaccountId: tenant.subaccountId,
          idempotencyKey: lifecycleKey('resume', input.externalRef, input.runKey),
        });
        await transitionWithEvent(input.externalRef, ['suspended'], 'active', input.reason, 'tenant.resumed', {
          subaccountId: tenant.subaccountId,
          operator: input.operator,
          balanceMicroUsd: wallet.balanceMicroUsd ?? null,
        });
        await audit(
          input.externalRef,
          'tenant.resumed',
          tenant.subaccountId,
          {
            reason: input.reason,
            balanceMicroUsd: wallet.balanceMicroUsd ?? null,
            requestId: result.requestId ?? null,
          },
          input.operator,
        );
        return { subaccountId: tenant.subaccountId, balanceMicroUsd: wallet.balanceMicroUsd ?? null };
      },
    ),

    /** Marks the tenant closing (blocks onboarding steps, rotations, new keys); closed = nothing to do. */
    beginClose: boundary(
      async (
        input: LifecycleInput,
      ): Promise<{ subaccountId: string; alreadyClosed: boolean; wasSuspended: boolean }> => {
        const tenant = await ownedTenant(input.externalRef);
        if (tenant.status === 'closed')
          return { subaccountId: tenant.subaccountId, alreadyClosed: true, wasSuspended: false };
        if (tenant.status !== 'closing') {
          await withTransaction(pool, async (tx) => {
            const moved = await transitionTenant(tx, input.externalRef, [tenant.status], 'closing', input.reason);
            if (moved)
              await emitEvent(tx, {
                type: 'tenant.closing',
                externalRef: input.externalRef,
                data: {
                  externalRef: input.externalRef,
                  subaccountId: tenant.subaccountId,
                  status: 'closing',
                  from: tenant.status,
                  reason: input.reason,
                  operator: input.operator,
                },
              });
            await appendAudit(tx, {
              ...auditOrigin(),
              actor: `operator:${input.operator}`,
              action: 'tenant.closing',
              externalRef: input.externalRef,
              subject: tenant.subaccountId,
              details: { reason: input.reason, from: tenant.status },
            });
          });
        }
        return { subaccountId: tenant.subaccountId, alreadyClosed: false, wasSuspended: tenant.status === 'suspended' };
      },
    ),

    /** Revokes every key of the tenant on the platform (ours or not), and records it. */
    revokeAllTenantKeys: boundary(
      async (input: { externalRef: string }): Promise<{ revoked: string[]; stillActive: number }> => {
        const tenant = await ownedTenant(input.externalRef);
        const { keys } = await platform.listTenantKeys({ subaccountId: tenant.subaccountId });
        const revoked: string[] = [];
        for (const key of keys.filter((k) => k.status !== 'revoked')) {
          try {
            await platform.revokeTenantKey({ subaccountId: tenant.subaccountId, keyId: key.id });
          } catch (error) {
            if (!(error instanceof PlatformNotFoundError)) throw error;
          }
          revoked.push(key.id);
          await audit(input.externalRef, 'key.revoked_for_close', key.id, { name: key.name ?? null });
        }
        for (const record of await listKeyRecords(pool, input.externalRef)) {
          if (record.status === 'creating') await markCreatingKeyFailed(pool, record.id);
          else if (record.status !== 'revoked' && record.status !== 'failed') await markKeyRevoked(pool, record.id);
        }
        const after = await platform.listTenantKeys({ subaccountId: tenant.subaccountId });
        return { revoked, stillActive: after.keys.filter((k) => k.status !== 'revoked').length };
      },
    ),

    /** Cleanup calls under a suspended tenant fail (403), so a suspended tenant is resumed first. */
    resumeForCleanup: boundary(async (input: LifecycleInput): Promise<{ resumed: boolean }> => {
      const tenant = await ownedTenant(input.externalRef);
      const { subaccount } = await platform.getSubaccount({ subaccountId: tenant.subaccountId });
      if (subaccount.status !== 'suspended') return { resumed: false };
      await platform.resumeSubaccount({
        subaccountId: tenant.subaccountId,
        idempotencyKey: lifecycleKey('close-resume', input.externalRef, input.runKey),
      });
      await audit(input.externalRef, 'tenant.resumed_for_cleanup', tenant.subaccountId, { reason: input.reason });
      return { resumed: true };
    }),

    listTenantProjects: boundary(
      async (input: { externalRef: string }): Promise<Array<{ id: string; name: string | null }>> => {
        const tenant = await ownedTenant(input.externalRef);
        const { projects } = await platform.listProjects({
          auth: { kind: 'platform', subaccountId: tenant.subaccountId },
        });
        return projects.map((p) => ({ id: p.id, name: p.name ?? null }));
      },
    ),

    /** Deletes one project under the tenant's context; a 404 means it is already gone. */
    deleteTenantProject: boundary(
      async (input: { externalRef: string; projectId: string }): Promise<{ deleted: boolean }> => {
        const tenant = await ownedTenant(input.externalRef);
        try {
          await platform.deleteProject({
            auth: { kind: 'platform', subaccountId: tenant.subaccountId },
            projectId: input.projectId,
          });
        } catch (error) {
          if (error instanceof PlatformNotFoundError) return { deleted: false };
          throw error;
        }
        await audit(input.externalRef, 'project.deleted_for_close', input.projectId, {});
        return { deleted: true };
      },
    ),

    /** Reads the balance left, closes the sub-account (a 404 after our own close counts as closed), records it. */
    closeTenantOnPlatform: boundary(async (input: LifecycleInput): Promise<{ balanceMicroUsd: string | null }> => {
      const tenant = await ownedTenant(input.externalRef);
      let balance: string | null = null;
      try {
        const { wallet } = await platform.getWallet({ subaccountId: tenant.subaccountId });
        balance = wallet.balanceKnown ? wallet.balanceMicroUsd! : null;
        await platform.closeSubaccount({
          subaccountId: tenant.subaccountId,
          idempotencyKey: lifecycleKey('close', input.externalRef, input.runKey),
        });
      } catch (error) {
        // Already closed by an earlier attempt whose response was lost: the platform hides closed tenants.
        if (!(error instanceof PlatformNotFoundError)) throw error;
      }
      await withTransaction(pool, async (tx) => {
        const before = await lockTenantStatus(tx, input.externalRef);
        await markTenantClosed(tx, input.externalRef, balance);
        if (before !== 'closed')
          await emitEvent(tx, {
            type: 'tenant.closed',
            externalRef: input.externalRef,
            data: {
              externalRef: input.externalRef,
              subaccountId: tenant.subaccountId,
              status: 'closed',
              balanceLeftMicroUsd: balance,
              reason: input.reason,
              operator: input.operator,
            },
          });
        await appendAudit(tx, {
          ...auditOrigin(),
          actor: `operator:${input.operator}`,
          action: 'tenant.closed',
          externalRef: input.externalRef,
          subject: tenant.subaccountId,
          details: { reason: input.reason, balanceLeftMicroUsd: balance },
        });
      });
      return { balanceMicroUsd: balance };
    }),
  };
}
