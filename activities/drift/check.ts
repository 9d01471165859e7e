import { appendAudit } from '../../src/db/audit-store.js';
import {
  deleteSnapshot,
  finishDriftCheck,
  getDriftCheck,
  insertDriftCheck,
  insertScheduleSnapshot,
  listBusyFromRecords,
  listUnownedSnapshot,
} from '../../src/db/drift-checks-store.js';
import { countOpenFindingsByKind, resolveUnseenUnowned, upsertFinding } from '../../src/db/drift-findings-store.js';
import { withTransaction } from '../../src/db/pool.js';
import { findTenant, listTenants } from '../../src/db/tenants-store.js';
import { unownedSubaccountFinding } from './compare.js';
import { DRIFT_KINDS } from '../../src/domain/drift-kinds.js';
import { DEFAULT_DRIFT_OPTIONS } from './options.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { activityFailure, boundary } from '../failures.js';
import { auditFinding } from './records.js';
import {
  activeRotationScheduleIds,
  endedRunStatus,
  listRotationSchedules,
  runningTenantWorkflows,
} from './temporal.js';
import { FailureCode } from '../../src/domain/failures.js';

/** The check's own bookkeeping: begin, pages of our records, who is busy, the unowned, finish. */
export interface DriftPageTenant {
  externalRef: string;
  subaccountId: string | null;
  status: string;
  /** The platform lists its recorded sub-account (operating or suspended). */
  listed: boolean;
}
export interface DriftCheckSummary {
  checkId: string;
  scope: string;
  openByKind: Record<string, number>;
  openTotal: number;
  unownedSubaccounts: number;
  resolvedUnowned: number;
}

export function createDriftCheckActivities(deps: ActivityDeps) {
  const { pool, logger } = deps;
  const options = deps.drift ?? DEFAULT_DRIFT_OPTIONS;

  return {
    /** Refuses an unknown tenant before anything is written; records the check and the schedules in effect. */
    beginDriftCheck: boundary(
      async (input: {
        externalRef: string | null;
        workflowId: string;
      }): Promise<{ checkId: string; schedulesKnown: boolean; visibility: boolean }> => {
        if (input.externalRef && !(await findTenant(pool, input.externalRef))) {
          throw activityFailure(
            FailureCode.TENANT_NOT_FOUND,
            `no tenant with external ref ${input.externalRef} in our records: nothing was checked`,
          );
        }
        // One listing of the rotation schedules for the whole check: the ids in effect (key_rotation_overdue) and
        // each tenant slot's interval (plan_schedule_differs), kept in the check's schedule snapshot.
        const listed = options.temporal ? await listRotationSchedules(options.temporal) : null;
        const schedules = listed ? activeRotationScheduleIds(listed) : null;
        const check = await withTransaction(pool, async (tx) => {
          const row = await insertDriftCheck(tx, {
            scope: input.externalRef ?? 'fleet',
            workflowId: input.workflowId,
            schedules,
          });
          await insertScheduleSnapshot(
            tx,
            row.id,
            (listed ?? []).filter((s) => s.scheduleId.startsWith('rotation:')),
          );
          return row;
        });
        return { checkId: check.id, schedulesKnown: schedules !== null, visibility: Boolean(options.temporal) };
      },
    ),

    loadDriftPage: boundary(
      async (input: {
        checkId: string;
        externalRef: string | null;
        after: string | null;
        limit: number;
      }): Promise<DriftPageTenant[]> => {
        const rows = input.externalRef
          ? [await findTenant(pool, input.externalRef)].filter((r) => r !== undefined)
          : await listTenants(pool, { limit: input.limit, ...(input.after ? { after: input.after } : {}) });
        if (input.externalRef && input.after !== null) return [];
        const { rows: listed } = await pool.query<{ id: string }>(
          `SELECT subaccount_id AS id FROM drift_subaccount_snapshot WHERE check_id = ` +
            `$1::bigint AND subaccount_id = ANY($2::text[]) AND status <> 'closed'`,
          [input.checkId, rows.map((r) => r.subaccountId).filter((id) => id !== null)],
        );
        const live = new Set(listed.map((r) => r.id));
        return rows.map((r) => ({
          externalRef: r.externalRef,
          subaccountId: r.subaccountId,
          status: r.status,
          listed: r.subaccountId !== null && live.has(r.subaccountId),
        }));
      },
    ),

    /**
     * Tenants with work under way are skipped, never fixed under it. Temporal visibility (any running
     * workflow tagged with the tenant's TenantExternalRef) and our records (an open
     * rotation, a close begun) both count. Without visibility, a record still being onboarded is
     * skipped too, as we cannot tell a running onboarding from an abandoned one.
     */
    findBusyTenants: boundary(
      async (input: {
        tenants: Array<{ externalRef: string; status: string }>;
      }): Promise<{ busy: Record<string, string>; visibility: boolean }> => {
        const refs = input.tenants.map((t) => t.externalRef);
        const busy: Record<string, string> = {};
        const fromRecords = await listBusyFromRecords(pool, refs);
        if (options.temporal) {
          const running = await runningTenantWorkflows(options.temporal, refs);
          const listed = new Set(running.map((r) => r.workflowId));
          for (const row of fromRecords) {
            // A rotation our records hold open, or a close begun, whose run has ended (not listed running, and its own
            // run says so): the records lost its end (a restore). Compared, not skipped: rotation_unrecorded, or
            // subaccount_gone for the close.
            const ended =
              row.workflowId !== null &&
              !listed.has(row.workflowId) &&
              (await endedRunStatus(options.temporal, row.workflowId, row.runId)) !== null;
            if (!ended) busy[row.externalRef] ??= row.reason;
          }
          for (const row of running) busy[row.externalRef] = row.reason;
        } else {
          for (const row of fromRecords) busy[row.externalRef] ??= row.reason;
          for (const t of input.tenants)
            if (t.status === 'creating' || t.status === 'created')
              busy[t.externalRef] ??= `record is ${t.status} and no Temporal visibility to prove no onboarding runs`;
        }
        return { busy, visibility: Boolean(options.temporal) };
      },
    ),

    /** Fleet checks only: sub-accounts that no record owns at all (report only). */
    recordUnownedSubaccounts: boundary(
      async (input: { checkId: string }): Promise<{ found: number; resolved: number }> => {
        const unowned = await listUnownedSnapshot(pool, input.checkId);
        return withTransaction(pool, async (tx) => {
          for (const subaccount of unowned) {
            const { row, change } = await upsertFinding(
              tx,
              input.checkId,
              unownedSubaccountFinding({
                id: subaccount.subaccountId,
                externalRef: subaccount.externalRef,
                status: subaccount.status,
              }),
            );
            if (change !== 'seen') await auditFinding(tx, row, change === 'opened' ? 'drift.opened' : 'drift.reopened');
          }
          const resolved = await resolveUnseenUnowned(tx, input.checkId);
          for (const row of resolved) await auditFinding(tx, row, 'drift.resolved');
          return { found: unowned.length, resolved: resolved.length };
        });
      },
    ),

    /** Summary into the check row, the audit log and one log line per check with a count per kind (the metric). */
    finishDriftCheck: boundary(
      async (input: { checkId: string; totals: Record<string, unknown> }): Promise<DriftCheckSummary> => {
        const check = await getDriftCheck(pool, input.checkId);
        const counts = await countOpenFindingsByKind(pool);
        const openByKind = Object.fromEntries(DRIFT_KINDS.map((k) => [k, counts[k] ?? 0]));
        const openTotal = Object.values(openByKind).reduce((a, b) => a + b, 0);
        const summary = { checkId: check.id, scope: check.scope, openByKind, openTotal, ...input.totals };
        await withTransaction(pool, async (tx) => {
          await deleteSnapshot(tx, check.id);
          if (check.state === 'running') {
            await finishDriftCheck(tx, check.id, summary);
            await appendAudit(tx, {
              ...auditOrigin(),
              action: 'drift.check_finished',
              subject: `drift-check:${check.id}`,
              details: summary,
            });
          }
        });
        logger.info(
          { event: 'drift.check_finished', ...summary },
          `drift check ${check.id} (${check.scope}): ${openTotal} open finding(s)`,
        );
        return {
          checkId: check.id,
          scope: check.scope,
          openByKind,
          openTotal,
          unownedSubaccounts: Number(input.totals.unownedSubaccounts ?? 0),
          resolvedUnowned: Number(input.totals.resolvedUnowned ?? 0),
        };
      },
    ),
  };
}
