import type { Queryable } from './pool.js';

/** Four-eyes approval requests (migration 0011). */
export interface ApprovalRow {
  id: string;
  action: 'resolveTransfer' | 'keyReveal';
  externalRef: string;
  params: Record<string, unknown>;
  requestedBy: string;
  reason: string;
  state: 'awaiting_approval' | 'approved' | 'rejected' | 'executed';
  decidedBy: string | null;
  decisionReason: string | null;
  decidedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
  /** awaiting_approval past its expiry. */
  expired: boolean;
}

const COLUMNS = `id, action, external_ref AS "externalRef", params, requested_by AS "requestedBy", reason, state,
  decided_by AS "decidedBy", decision_reason AS "decisionReason", decided_at AS "decidedAt",
  expires_at AS "expiresAt", created_at AS "createdAt",
  (state = 'awaiting_approval' AND expires_at <= now()) AS expired`;

export async function insertApproval(
  db: Queryable,
  input: Pick<ApprovalRow, 'id' | 'action' | 'externalRef' | 'params' | 'requestedBy' | 'reason'> & { ttlMs: number },
): Promise<ApprovalRow> {
  const { rows } = await db.query<ApprovalRow>(
    `INSERT INTO approval_requests (id, action, external_ref, params, requested_by, reason, state, expires_at)
     VALUES ($1::text, $2::text, $3::text, $4::jsonb, $5::text, $6::text, 'awaiting_approval',
             now() + make_interval(secs => $7::double precision / 1000))
     RETURNING ${COLUMNS}`,
    [
      input.id,
      input.action,
      input.externalRef,
      JSON.stringify(input.params),
      input.requestedBy,
      input.reason,
      input.ttlMs,
    ],
  );
  return rows[0]!;
}

export async function findApproval(
  db: Queryable,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ApprovalRow | undefined> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT ${COLUMNS} FROM approval_requests WHERE id = $1::text${options.lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0];
}

export async function listApprovals(db: Queryable, options: { all?: boolean } = {}): Promise<ApprovalRow[]> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT ${COLUMNS} FROM approval_requests
      WHERE $1::boolean OR (state = 'awaiting_approval' AND expires_at > now()) OR state = 'approved'
      ORDER BY created_at LIMIT 500`,
    [options.all ?? false],
  );
  return rows;
}

/** awaiting_approval -> approved | rejected; approved -> executed. True when it moved. */
export async function setApprovalState(
  db: Queryable,
  id: string,
  from: ApprovalRow['state'],
  to: ApprovalRow['state'],
  decision?: { by: string; reason: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE approval_requests SET state = $3::text,
            decided_by = coalesce($4::text, decided_by), decision_reason = coalesce($5::text, decision_reason),
            decided_at = CASE WHEN $4::text IS NULL THEN decided_at ELSE now() END
      WHERE id = $1::text AND state = $2::text`,
    [id, from, to, decision?.by ?? null, decision?.reason ?? null],
  );
  return (rowCount ?? 0) > 0;
}

/** An approved, not yet used key reveal of this operator for this slot. */
export async function findApprovedReveal(
  db: Queryable,
  input: { externalRef: string; slot: string; requestedBy: string },
): Promise<ApprovalRow | undefined> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT ${COLUMNS} FROM approval_requests
      WHERE action = 'keyReveal' AND state = 'approved' AND external_ref = $1::text
        AND params->>'slot' = $2::text AND requested_by = $3::text AND expires_at > now()
      ORDER BY created_at LIMIT 1 FOR UPDATE`,
    [input.externalRef, input.slot, input.requestedBy],
  );
  return rows[0];
}

/** A request locked for its one use, with whether it is past its expiry now (whatever its state). */
export async function lockApprovalForUse(
  db: Queryable,
  id: string,
): Promise<(ApprovalRow & { pastExpiry: boolean }) | undefined> {
  const { rows } = await db.query<ApprovalRow & { pastExpiry: boolean }>(
    `SELECT ${COLUMNS}, expires_at <= now() AS "pastExpiry" FROM approval_requests WHERE id = $1::text FOR UPDATE`,
    [id],
  );
  return rows[0];
}
