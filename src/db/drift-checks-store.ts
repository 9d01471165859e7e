import type { Queryable } from './pool.js';
import { OPEN_ROTATION_STATES } from './key-rotations-store.js';
import { lifecycleWorkflowId } from '../domain/ids.js';
import { TenantStatus } from '../domain/tenant-rules.js';

/** One row per drift check (a run and its continue-as-new successors), and its sub-account snapshot. */
export interface DriftCheckRow {
  id: string;
  scope: string;
  workflowId: string;
  state: 'running' | 'completed' | 'failed';
  schedules: string[];
  schedulesKnown: boolean;
  summary: Record<string, unknown>;
  startedAt: Date;
  finishedAt: Date | null;
}

const COLUMNS = `id, scope, workflow_id AS "workflowId", state, schedules, schedules_known AS "schedulesKnown", summary,
  started_at AS "startedAt", finished_at AS "finishedAt"`;

export async function insertDriftCheck(
  db: Queryable,
  input: { scope: string; workflowId: string; schedules: string[] | null },
): Promise<DriftCheckRow> {
  const { rows } = await db.query<DriftCheckRow>(
    `INSERT INTO drift_checks (scope, workflow_id, state, schedules, schedules_known)
     VALUES ($1::text, $2::text, 'running', $3::jsonb, $4::boolean) RETURNING ${COLUMNS}`,
    [input.scope, input.workflowId, JSON.stringify(input.schedules ?? []), input.schedules !== null],
  );
  return rows[0]!;
}

export async function getDriftCheck(db: Queryable, id: string): Promise<DriftCheckRow> {
  const { rows } = await db.query<DriftCheckRow>(`SELECT ${COLUMNS} FROM drift_checks WHERE id = $1::bigint`, [id]);
  if (!rows[0]) throw new Error(`no drift check ${id}`);
  return rows[0];
}

export async function finishDriftCheck(db: Queryable, id: string, summary: Record<string, unknown>): Promise<void> {
  await db.query(
    `UPDATE drift_checks SET state = 'completed', summary = $2::jsonb, finished_at = ` +
      `coalesce(finished_at, now()) WHERE id = $1::bigint`,
    [id, JSON.stringify(summary)],
  );
}

export interface SnapshotRow {
  subaccountId: string;
  externalRef: string | null;
  status: string;
  rawStatus: string | null;
}

/** Replaces the check's snapshot (a retried listing writes it again whole). */
export async function replaceSnapshot(db: Queryable, checkId: string, rows: SnapshotRow[]): Promise<void> {
  await db.query(`DELETE FROM drift_subaccount_snapshot WHERE check_id = $1::bigint`, [checkId]);
  await db.query(
    `INSERT INTO drift_subaccount_snapshot (check_id, subaccount_id, external_ref, status, raw_status)
     SELECT $1::bigint, s.id, s.ref, s.status, s.raw
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS s(id, ref, status, raw)
     ON CONFLICT DO NOTHING`,
    [
      checkId,
      rows.map((r) => r.subaccountId),
      rows.map((r) => r.externalRef),
      rows.map((r) => r.status),
      rows.map((r) => r.rawStatus),
    ],
  );
}

/** The snapshot rows a tenant page needs: those carrying one of the refs or one of the sub-account ids. */
export async function listSnapshotFor(
  db: Queryable,
  checkId: string,
  refs: string[],
  subaccountIds: string[],
): Promise<SnapshotRow[]> {
  const { rows } = await db.query<SnapshotRow>(
    `SELECT subaccount_id AS "subaccountId", external_ref AS "externalRef", status, raw_status AS "rawStatus"
       FROM drift_subaccount_snapshot
      WHERE check_id = $1::bigint AND (external_ref = ANY($2::text[]) OR subaccount_id = ANY($3::text[]))`,
    [checkId, refs, subaccountIds],
  );
  return rows;
}

/** Sub-accounts that no record owns: no record carries their ref, and no record points at them. */
export async function listUnownedSnapshot(db: Queryable, checkId: string): Promise<SnapshotRow[]> {
  const { rows } = await db.query<SnapshotRow>(
    `SELECT s.subaccount_id AS "subaccountId", s.external_ref AS "externalRef", s.status, s.raw_status AS "rawStatus"
       FROM drift_subaccount_snapshot s
      WHERE s.check_id = $1::bigint AND s.status <> 'closed'
        AND NOT EXISTS (SELECT 1 FROM tenants t WHERE t.external_ref = s.external_ref OR 
          t.subaccount_id = s.subaccount_id)
      ORDER BY s.subaccount_id`,
    [checkId],
  );
  return rows;
}

/** The check's snapshots (sub-accounts and rotation schedules): dropped when it finishes. */
export async function deleteSnapshot(db: Queryable, checkId: string): Promise<void> {
  await db.query(`DELETE FROM drift_subaccount_snapshot WHERE check_id = $1::bigint`, [checkId]);
  await db.query(`DELETE FROM drift_schedule_snapshot WHERE check_id = $1::bigint`, [checkId]);
}

export interface ScheduleSnapshotRow {
  scheduleId: string;
  everyMs: number | null;
  paused: boolean;
}

/** The tenant rotation schedules the check's one listing saw (written with the check's row). */
export async function insertScheduleSnapshot(
  db: Queryable,
  checkId: string,
  rows: ScheduleSnapshotRow[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO drift_schedule_snapshot (check_id, schedule_id, every_ms, paused)
     SELECT $1::bigint, s.id, s.every, s.paused
       FROM unnest($2::text[], $3::bigint[], $4::boolean[]) AS s(id, every, paused)
     ON CONFLICT DO NOTHING`,
    [checkId, rows.map((r) => r.scheduleId), rows.map((r) => r.everyMs), rows.map((r) => r.paused)],
  );
}

/** The snapshot rows of these schedule ids (absent: the listing did not show that schedule). */
export async function listScheduleSnapshotFor(
  db: Queryable,
  checkId: string,
  scheduleIds: string[],
): Promise<ScheduleSnapshotRow[]> {
  const { rows } = await db.query<ScheduleSnapshotRow>(
    `SELECT schedule_id AS "scheduleId", every_ms::float8 AS "everyMs", paused
       FROM drift_schedule_snapshot WHERE check_id = $1::bigint AND schedule_id = ANY($2::text[])`,
    [checkId, scheduleIds],
  );
  return rows;
}

/** Tenants our records show work under: an open key rotation, or a close begun. */
export async function listBusyFromRecords(
  db: Queryable,
  refs: string[],
): Promise<Array<{ externalRef: string; reason: string; workflowId: string | null; runId: string | null }>> {
  const { rows } = await db.query<{
    externalRef: string;
    reason: string;
    workflowId: string | null;
    runId: string | null;
  }>(
    `SELECT external_ref AS "externalRef", 'open key rotation (' || slot || ', ' || state || ') in our records'
      AS reason, workflow_id AS "workflowId", run_id AS "runId"
       FROM key_rotations WHERE external_ref = ANY($1::text[]) AND state = ANY($2::text[])
     UNION ALL
     SELECT external_ref, 'record is ' || status, NULL, NULL FROM tenants WHERE external_ref = ANY($1::text[])
       AND status = $3::text`,
    [refs, OPEN_ROTATION_STATES, TenantStatus.closing],
  );
  // A close begun in the records is the close run's (one per tenant at a time): its id, to ask how it ended.
  return rows.map((row) =>
    row.workflowId === null ? { ...row, workflowId: lifecycleWorkflowId('close', row.externalRef) } : row,
  );
}
