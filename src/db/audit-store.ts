import type { Queryable } from './pool.js';

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
    `INSERT INTO audit_log (actor, action, external_ref, subject, details, workflow_id, run_id)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::text, $7::text)`,
    [
      entry.actor,
      entry.action,
      entry.externalRef ?? null,
      entry.subject ?? null,
      JSON.stringify(entry.details ?? {}),
      entry.workflowId ?? null,
      entry.runId ?? null,
    ],
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
