import type { Queryable } from './pool.js';

/**
 * Drift findings: one row per natural key (kind, subject). Seen again: last_seen moves, the
 * evidence is replaced; no longer seen: resolved (`not_seen`); fixed: resolved (`fixed`) once.
 * Rows are never deleted.
 */
export interface DriftFindingRow {
  id: string;
  kind: string;
  subject: string;
  externalRef: string | null;
  subaccountId: string | null;
  evidence: Record<string, unknown>;
  status: 'open' | 'resolved';
  firstSeen: Date;
  lastSeen: Date;
  seenCount: number;
  lastCheckId: string;
  resolvedAt: Date | null;
  resolution: 'not_seen' | 'fixed' | null;
  fix: string | null;
  fixedAt: Date | null;
}

const COLUMNS = `id, kind, subject, external_ref AS "externalRef", subaccount_id AS "subaccountId", evidence, status,
  first_seen AS "firstSeen", last_seen AS "lastSeen", seen_count AS "seenCount", last_check_id AS "lastCheckId",
  resolved_at AS "resolvedAt", resolution, fix, fixed_at AS "fixedAt"`;

export type FindingChange = 'opened' | 'reopened' | 'seen';

/** Records one sighting; says whether the finding is new, back after being resolved, or still open. */
export async function upsertFinding(
  db: Queryable,
  checkId: string,
  input: {
    kind: string;
    subject: string;
    externalRef: string | null;
    subaccountId: string | null;
    evidence: Record<string, unknown>;
  },
): Promise<{ row: DriftFindingRow; change: FindingChange }> {
  const { rows: before } = await db.query<{ status: string }>(
    `SELECT status FROM drift_findings WHERE kind = $1::text AND subject = $2::text FOR UPDATE`,
    [input.kind, input.subject],
  );
  const { rows } = await db.query<DriftFindingRow>(
    `INSERT INTO drift_findings (kind, subject, external_ref, subaccount_id, evidence, status, last_check_id)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::jsonb, 'open', $6::bigint)
     ON CONFLICT (kind, subject) DO UPDATE SET
        external_ref = EXCLUDED.external_ref,
        subaccount_id = EXCLUDED.subaccount_id,
        evidence = EXCLUDED.evidence,
        last_seen = now(),
        seen_count = drift_findings.seen_count + CASE WHEN drift_findings.last_check_id = EXCLUDED.last_check_id
          THEN 0 ELSE 1 END,
        last_check_id = EXCLUDED.last_check_id,
        status = 'open',
        resolved_at = NULL,
        resolution = NULL,
        fix = CASE WHEN drift_findings.status = 'resolved' THEN NULL ELSE drift_findings.fix END,
        fixed_at = CASE WHEN drift_findings.status = 'resolved' THEN NULL ELSE drift_findings.fixed_at END
     RETURNING ${COLUMNS}`,
    [input.kind, input.subject, input.externalRef, input.subaccountId, JSON.stringify(input.evidence), checkId],
  );
  const change: FindingChange = !before[0] ? 'opened' : before[0].status === 'resolved' ? 'reopened' : 'seen';
  return { row: rows[0]!, change };
}

/** Open findings of a tenant that this check did not see again: resolved, returned for the audit. */
export async function resolveUnseenOfTenant(
  db: Queryable,
  externalRef: string,
  checkId: string,
): Promise<DriftFindingRow[]> {
  const { rows } = await db.query<DriftFindingRow>(
    `UPDATE drift_findings SET status = 'resolved', resolved_at = now(), resolution = 'not_seen'
      WHERE external_ref = $1::text AND status = 'open' AND last_check_id <> $2::bigint
      RETURNING ${COLUMNS}`,
    [externalRef, checkId],
  );
  return rows;
}

/** Unrecorded sub-accounts whose ref no record carries, not seen by this (fleet) check: resolved. */
export async function resolveUnseenUnowned(db: Queryable, checkId: string): Promise<DriftFindingRow[]> {
  const { rows } = await db.query<DriftFindingRow>(
    `UPDATE drift_findings f SET status = 'resolved', resolved_at = now(), resolution = 'not_seen'
      WHERE f.kind = 'subaccount_unrecorded' AND f.status = 'open' AND f.last_check_id <> $1::bigint
        AND (f.external_ref IS NULL OR NOT EXISTS (SELECT 1 FROM tenants t WHERE t.external_ref = f.external_ref))
      RETURNING ${COLUMNS}`,
    [checkId],
  );
  return rows;
}

/** Marks a finding fixed; only the first caller gets the row (the fix is applied and audited once). */
export async function markFindingFixed(db: Queryable, id: string, fix: string): Promise<DriftFindingRow | undefined> {
  const { rows } = await db.query<DriftFindingRow>(
    `UPDATE drift_findings SET status = 'resolved', resolution = 'fixed', resolved_at = now(), fix = $2::text,
      fixed_at = now()
      WHERE id = $1::bigint AND fixed_at IS NULL AND status = 'open'
      RETURNING ${COLUMNS}`,
    [id, fix],
  );
  return rows[0];
}

export async function findFinding(db: Queryable, id: string): Promise<DriftFindingRow | undefined> {
  const { rows } = await db.query<DriftFindingRow>(`SELECT ${COLUMNS} FROM drift_findings WHERE id = $1::bigint`, [id]);
  return rows[0];
}

export async function listFindings(
  db: Queryable,
  options: { openOnly?: boolean; externalRef?: string; limit?: number } = {},
): Promise<DriftFindingRow[]> {
  const { rows } = await db.query<DriftFindingRow>(
    `SELECT ${COLUMNS} FROM drift_findings
      WHERE ($1::boolean IS NOT TRUE OR status = 'open') AND ($2::text IS NULL OR external_ref = $2::text)
      ORDER BY status, kind, last_seen DESC, id LIMIT $3::int`,
    [options.openOnly ?? false, options.externalRef ?? null, options.limit ?? 500],
  );
  return rows;
}

export async function countOpenFindingsByKind(db: Queryable): Promise<Record<string, number>> {
  const { rows } = await db.query<{ kind: string; count: number }>(
    `SELECT kind, count(*)::int AS count FROM drift_findings WHERE status = 'open' GROUP BY kind ORDER BY kind`,
  );
  return Object.fromEntries(rows.map((r) => [r.kind, r.count]));
}
