import type { Queryable } from './pool.js';

/** Delayed closes (migration 0011): one row per close run that waits out a window. */
export interface CloseScheduleRow {
  runKey: string;
  externalRef: string;
  priorStatus: string;
  closeAt: Date;
  state: 'scheduled' | 'cancelled' | 'due';
  requestedBy: string;
  cancelledBy: string | null;
}

const COLUMNS = `run_key AS "runKey", external_ref AS "externalRef", prior_status AS "priorStatus",
  close_at AS "closeAt", state, requested_by AS "requestedBy", cancelled_by AS "cancelledBy"`;

/** The run's schedule, written once (a retry gets the first row back, with the status it found). */
export async function insertCloseScheduleIfAbsent(
  db: Queryable,
  input: { runKey: string; externalRef: string; priorStatus: string; closeAt: string; requestedBy: string },
): Promise<CloseScheduleRow> {
  await db.query(
    `INSERT INTO close_schedules (run_key, external_ref, prior_status, close_at, state, requested_by)
     VALUES ($1::text, $2::text, $3::text, $4::timestamptz, 'scheduled', $5::text)
     ON CONFLICT (run_key) DO NOTHING`,
    [input.runKey, input.externalRef, input.priorStatus, input.closeAt, input.requestedBy],
  );
  return getCloseSchedule(db, input.runKey);
}

export async function getCloseSchedule(db: Queryable, runKey: string): Promise<CloseScheduleRow> {
  const { rows } = await db.query<CloseScheduleRow>(`SELECT ${COLUMNS} FROM close_schedules WHERE run_key = $1::text`, [
    runKey,
  ]);
  if (!rows[0]) throw new Error(`no close schedule for run ${runKey}`);
  return rows[0];
}

export async function findScheduledClose(db: Queryable, externalRef: string): Promise<CloseScheduleRow | undefined> {
  const { rows } = await db.query<CloseScheduleRow>(
    `SELECT ${COLUMNS} FROM close_schedules WHERE external_ref = $1::text AND state = 'scheduled'`,
    [externalRef],
  );
  return rows[0];
}

/** scheduled -> cancelled | due; true when it moved. */
export async function settleCloseSchedule(
  db: Queryable,
  runKey: string,
  state: 'cancelled' | 'due',
  cancelledBy: string | null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE close_schedules SET state = $2::text, cancelled_by = $3::text, updated_at = now()
      WHERE run_key = $1::text AND state = 'scheduled'`,
    [runKey, state, cancelledBy],
  );
  return (rowCount ?? 0) > 0;
}
