import { prepared, type Queryable } from './pool.js';

/** The append-only audit log (the database refuses updates and deletes). */
export interface AuditEntry {
  actor: string;
  action: string;
  externalRef?: string | null;
  subject?: string | null;
  details?: Record<string, unknown>;
  workflowId?: string | null;
  runId?: string | null;
}

export interface AuditRow extends Required<Omit<AuditEntry, 'details'>> {
  id: string;
  at: Date;
  details: Record<string, unknown>;
}

export async function appendAudit(db: Queryable, entry: AuditEntry): Promise<void> {
  await db.query(
    prepared(
      `INSERT INTO audit_log (actor, action, external_ref, subject, details, workflow_id, run_id)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::text, $7::text)`,
      auditParams(entry),
    ),
  );
}

export async function listAuditForTenant(db: Queryable, externalRef: string, limit = 200): Promise<AuditRow[]> {
  const { rows } = await db.query(
    `SELECT id, at, actor, action, external_ref AS "externalRef", subject, details,
            workflow_id AS "workflowId", run_id AS "runId"
       FROM audit_log WHERE external_ref = $1::text ORDER BY id LIMIT $2::int`,
    [externalRef, limit],
  );
  return rows as AuditRow[];
}

/** The latest `limit` audit rows of a tenant, oldest first. */
export async function listRecentAuditForTenant(db: Queryable, externalRef: string, limit: number): Promise<AuditRow[]> {
  const rows = await db.query(
    `SELECT * FROM (
       SELECT id, at, actor, action, external_ref AS "externalRef", subject, details,
              workflow_id AS "workflowId", run_id AS "runId"
         FROM audit_log WHERE external_ref = $1::text ORDER BY id DESC LIMIT $2::int) recent
     ORDER BY id`,
    [externalRef, limit],
  );
  return rows.rows as AuditRow[];
}

/**
 * The audit row of a change, written by the SAME statement as the change (one round trip, one
 * atomic effect): `WITH changed AS (<insert/update ... RETURNING>), audited AS (<auditFrom>) SELECT
 * * FROM changed`. The row is written once per row `changed` returns (filtered by `where`).
 */
export function auditFrom(cte: string, firstParam: number, where = ''): string {
  const p = (i: number) => `$${firstParam + i}`;
  return `INSERT INTO audit_log (actor, action, external_ref, subject, details, workflow_id, run_id)
    SELECT ${p(0)}::text, ${p(1)}::text, ${p(2)}::text, ${p(3)}::text, ${p(4)}::jsonb, ${p(5)}::text,
      ${p(6)}::text FROM ${cte} ${where}`;
}

export function auditParams(entry: AuditEntry): unknown[] {
  return [
    entry.actor,
    entry.action,
    entry.externalRef ?? null,
    entry.subject ?? null,
    JSON.stringify(entry.details ?? {}),
    entry.workflowId ?? null,
    entry.runId ?? null,
  ];
}
