import { appendAudit, listAuditForTenant } from '../src/db/audit-store.js';
import { getCloseSchedule, insertCloseScheduleIfAbsent, settleCloseSchedule } from '../src/db/close-schedules-store.js';
import { upsertCloseStatement } from '../src/db/close-statements-store.js';
import { withTransaction } from '../src/db/pool.js';
import { listKeyRecords } from '../src/db/tenant-keys-store.js';
import { findTenant, transitionTenant } from '../src/db/tenants-store.js';
import { isClosing, type TenantStatus } from '../src/domain/tenant-rules.js';
import { listTransferIntents } from '../src/db/transfer-intents-store.js';
import { transferNameOf } from '../src/domain/onboarding.js';
import { FailureCode } from '../src/domain/failures.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';
import { lifecycleKey, type LifecycleInput } from './lifecycle.js';

/**
 * The delayed close (suspend now, close when the window ends, or put the tenant back when an
 * operator cancels in time) and the final statement written before the platform close.
 */
export function createCloseScheduleActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;

  async function ownedTenant(externalRef: string) {
    const tenant = await findTenant(pool, externalRef);
    if (!tenant?.subaccountId)
      throw activityFailure(
        FailureCode.TENANT_NOT_FOUND,
        `no tenant with external ref ${externalRef} (and a sub-account) in our records`,
      );
    return { ...tenant, subaccountId: tenant.subaccountId };
  }

  return {
    /** Records the schedule, suspends the tenant (platform first, then our record) and audits who asked. */
    scheduleClose: boundary(
      async (
        input: LifecycleInput & { closeAt: string; after: string },
      ): Promise<{ subaccountId: string; windowed: boolean }> => {
        const tenant = await ownedTenant(input.externalRef);
        if (isClosing(tenant.status)) return { subaccountId: tenant.subaccountId, windowed: false };
        const schedule = await insertCloseScheduleIfAbsent(pool, {
          runKey: input.runKey,
          externalRef: input.externalRef,
          priorStatus: tenant.status,
          closeAt: input.closeAt,
          requestedBy: input.operator,
        }).catch((error: unknown) => {
          if ((error as { code?: string }).code === '23505')
            throw activityFailure(
              FailureCode.CLOSE_SCHEDULED,
              `tenant ${input.externalRef} already has a close scheduled by another run`,
            );
          throw error;
        });
        if (tenant.status !== 'suspended') {
          await platform.suspendSubaccount({
            subaccountId: tenant.subaccountId,
            idempotencyKey: lifecycleKey('close-suspend', input.externalRef, input.runKey),
          });
        }
        await withTransaction(pool, async (tx) => {
          await transitionTenant(tx, input.externalRef, [tenant.status], 'suspended', input.reason);
          await appendAudit(tx, {
            ...auditOrigin(),
            actor: `operator:${input.operator}`,
            action: 'tenant.close_scheduled',
            externalRef: input.externalRef,
            subject: tenant.subaccountId,
            details: { reason: input.reason, after: input.after, closeAt: input.closeAt, from: schedule.priorStatus },
          });
        });
        return { subaccountId: tenant.subaccountId, windowed: true };
      },
    ),

    /** Cancelled inside the window: back to the status it had (resumed on the platform when it was not suspended). */
    cancelScheduledClose: boundary(
      async (input: {
        externalRef: string;
        runKey: string;
        operator: string;
        reason: string;
      }): Promise<{ status: string }> => {
        const tenant = await ownedTenant(input.externalRef);
        const schedule = await getCloseSchedule(pool, input.runKey);
        const back = schedule.priorStatus as TenantStatus;
        if (schedule.state === 'cancelled') return { status: tenant.status };
        if (back !== 'suspended') {
          await platform.resumeSubaccount({
            subaccountId: tenant.subaccountId,
            idempotencyKey: lifecycleKey('close-cancel', input.externalRef, input.runKey),
          });
        }
        await withTransaction(pool, async (tx) => {
          await transitionTenant(tx, input.externalRef, ['suspended'], back, input.reason);
          await settleCloseSchedule(tx, input.runKey, 'cancelled', input.operator);
          await appendAudit(tx, {
            ...auditOrigin(),
            actor: `operator:${input.operator}`,
            action: 'tenant.close_cancelled',
            externalRef: input.externalRef,
            subject: tenant.subaccountId,
            details: { reason: input.reason, restoredStatus: back, closeAt: schedule.closeAt.toISOString() },
          });
        });
        return { status: back };
      },
    ),

    closeWindowEnded: boundary(async (input: { runKey: string }): Promise<void> => {
      await settleCloseSchedule(pool, input.runKey, 'due', null);
    }),

    /**
     * The tenant's final statement, into our records before the platform close: its transfers, the
     * balance left, its keys (ids, fingerprints, dates), the projects deleted and the audit trail.
     * Nothing secret: key records hold no token, transfer rows no credential. Rewritten on a retry.
     */
    writeCloseStatement: boundary(
      async (input: { externalRef: string; runKey: string; projectsDeleted: string[] }): Promise<{ written: true }> => {
        const tenant = await ownedTenant(input.externalRef);
        const { wallet } = await platform.getWallet({ subaccountId: tenant.subaccountId });
        const [transfers, keys, audit] = await Promise.all([
          listTransferIntents(pool, input.externalRef),
          listKeyRecords(pool, input.externalRef),
          listAuditForTenant(pool, input.externalRef, 100_000),
        ]);
        const statement = {
          externalRef: tenant.externalRef,
          name: tenant.name,
          subaccountId: tenant.subaccountId,
          writtenAt: new Date().toISOString(),
          balanceLeftMicroUsd: wallet.balanceKnown ? wallet.balanceMicroUsd! : null,
          transfers: transfers.map((t) => ({
            purpose: transferNameOf(t.purpose),
            kind: t.kind,
            amountMicroUsd: t.amountMicroUsd,
            state: t.state,
            idempotencyKey: t.idempotencyKey,
            platformTransferId: t.platformTransferId,
            requestedBy: t.requestedBy,
            reason: t.reason,
            createdAt: t.createdAt,
            updatedAt: t.updatedAt,
          })),
          keys: keys.map((k) => ({
            keyId: k.platformKeyId,
            slot: k.slot,
            generation: k.generation,
            status: k.status,
            fingerprint: k.fingerprint,
            createdAt: k.createdAt,
            activatedAt: k.activatedAt,
            revokedAt: k.revokedAt,
          })),
          projectsDeleted: input.projectsDeleted,
          audit: audit.map((a) => ({
            at: a.at,
            actor: a.actor,
            action: a.action,
            subject: a.subject,
            details: a.details,
          })),
        };
        await withTransaction(pool, async (tx) => {
          await upsertCloseStatement(tx, { runKey: input.runKey, externalRef: input.externalRef, statement });
          await appendAudit(tx, {
            ...auditOrigin(),
            action: 'tenant.statement_written',
            externalRef: input.externalRef,
            subject: tenant.subaccountId,
            details: { transfers: transfers.length, keys: keys.length, projectsDeleted: input.projectsDeleted.length },
          });
        });
        return { written: true };
      },
    ),
  };
}
