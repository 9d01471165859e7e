import { prepared, type Queryable } from './pool.js';

/** Rotations of a key slot: which generation replaces which, and how far the run got. Never a token. */
export const RotationState = {
  running: 'running',
  held: 'held',
  key_limit: 'key_limit',
  completed: 'completed',
  aborted: 'aborted',
  cancelled: 'cancelled',
  failed: 'failed',
} as const;
export type RotationState = (typeof RotationState)[keyof typeof RotationState];
/**
 * A rotation in these states is open: one per slot (the partial unique index key_rotations_one_open_per_slot
 * spells the same list, checked by test/unit/open-rotation-states.test.ts), and a close waits for it. Every
 * query binds this list (`state = ANY($n::text[])`) rather than spelling it again.
 */
export const OPEN_ROTATION_STATES: readonly RotationState[] = ['running', 'held', 'key_limit'];

export interface KeyRotationRow {
  id: string;
  externalRef: string;
  slot: string;
  fromGeneration: number;
  toGeneration: number;
  state: RotationState;
  stage: string;
  emergency: boolean;
  deployer: string;
  workflowId: string;
  runId: string | null;
  deployedAt: Date | null;
  finishedAt: Date | null;
  outcome: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = `id, external_ref AS "externalRef", slot, from_generation AS "fromGeneration",
  to_generation AS "toGeneration", state, stage, emergency, deployer, workflow_id AS "workflowId",
  run_id AS "runId", deployed_at AS "deployedAt", finished_at AS "finishedAt", outcome,
  created_at AS "createdAt", updated_at AS "updatedAt"`;

/**
 * Reads the tenant's status under a share lock: a close that sets `closing` (an UPDATE) waits for
 * this transaction, so a rotation row is either visible to the close or refused by the status.
 */
export async function lockTenantForRotation(
  db: Queryable,
  externalRef: string,
): Promise<{ status: string; subaccountId: string | null } | undefined> {
  const { rows } = await db.query<{ status: string; subaccountId: string | null }>(
    prepared(`SELECT status, subaccount_id AS "subaccountId" FROM tenants WHERE external_ref = $1::text FOR SHARE`, [
      externalRef,
    ]),
  );
  return rows[0];
}

export async function findOpenRotation(
  db: Queryable,
  externalRef: string,
  slot: string,
): Promise<KeyRotationRow | undefined> {
  const { rows } = await db.query<KeyRotationRow>(
    prepared(
      `SELECT ${COLUMNS} FROM key_rotations WHERE external_ref = $1::text AND slot = $2::text
      AND state = ANY($3::text[])`,
      [externalRef, slot, OPEN_ROTATION_STATES],
    ),
  );
  return rows[0];
}

export async function insertRotation(
  db: Queryable,
  input: {
    externalRef: string;
    slot: string;
    fromGeneration: number;
    toGeneration: number;
    emergency: boolean;
    deployer: string;
    workflowId: string;
    runId: string | null;
  },
): Promise<KeyRotationRow> {
  const { rows } = await db.query<KeyRotationRow>(
    prepared(
      `INSERT INTO key_rotations (external_ref, slot, from_generation, to_generation, state, emergency, deployer,
      workflow_id, run_id)
     VALUES ($1::text, $2::text, $3::int, $4::int, 'running', $5::boolean, $6::text, $7::text, $8::text)
     RETURNING ${COLUMNS}`,
      [
        input.externalRef,
        input.slot,
        input.fromGeneration,
        input.toGeneration,
        input.emergency,
        input.deployer,
        input.workflowId,
        input.runId,
      ],
    ),
  );
  return rows[0]!;
}

/** Hands an open rotation to the run that resumes it (a run that was terminated leaves its row open). */
export async function adoptRotation(
  db: Queryable,
  id: string,
  owner: { workflowId: string; runId: string | null; emergency: boolean },
): Promise<KeyRotationRow> {
  const { rows } = await db.query<KeyRotationRow>(
    `UPDATE key_rotations SET workflow_id = $2::text, run_id = $3::text, emergency = emergency OR $4::boolean,
      updated_at = now()
      WHERE id = $1::bigint RETURNING ${COLUMNS}`,
    [id, owner.workflowId, owner.runId, owner.emergency],
  );
  return rows[0]!;
}

export interface RotationChange {
  state?: RotationState;
  stage?: string;
  deployed?: boolean;
  emergency?: boolean;
  outcome?: Record<string, unknown>;
}

/** Updates an open rotation; a finished one is never reopened (returns undefined then). */
export async function updateRotation(
  db: Queryable,
  id: string,
  change: RotationChange,
): Promise<KeyRotationRow | undefined> {
  const finished = change.state !== undefined && !OPEN_ROTATION_STATES.includes(change.state);
  const { rows } = await db.query<KeyRotationRow>(
    prepared(
      `UPDATE key_rotations SET
        state = coalesce($2::text, state),
        stage = coalesce($3::text, stage),
        deployed_at = CASE WHEN $4::boolean THEN coalesce(deployed_at, now()) ELSE deployed_at END,
        emergency = emergency OR coalesce($5::boolean, false),
        outcome = outcome || coalesce($6::jsonb, '{}'::jsonb),
        finished_at = CASE WHEN $7::boolean THEN now() ELSE finished_at END,
        updated_at = now()
      WHERE id = $1::bigint AND state = ANY($8::text[])
      RETURNING ${COLUMNS}`,
      [
        id,
        change.state ?? null,
        change.stage ?? null,
        change.deployed ?? false,
        change.emergency ?? null,
        change.outcome ? JSON.stringify(change.outcome) : null,
        finished,
        OPEN_ROTATION_STATES,
      ],
    ),
  );
  return rows[0];
}

export async function listOpenRotations(db: Queryable, externalRef: string): Promise<KeyRotationRow[]> {
  const { rows } = await db.query<KeyRotationRow>(
    `SELECT ${COLUMNS} FROM key_rotations WHERE external_ref = $1::text AND state = ANY($2::text[]) ORDER BY id`,
    [externalRef, OPEN_ROTATION_STATES],
  );
  return rows;
}

export async function listRotations(db: Queryable, externalRef: string, limit = 20): Promise<KeyRotationRow[]> {
  const { rows } = await db.query<KeyRotationRow>(
    `SELECT ${COLUMNS} FROM (SELECT * FROM key_rotations WHERE external_ref = ` +
      `$1::text ORDER BY id DESC LIMIT $2::int) recent ORDER BY id`,
    [externalRef, limit],
  );
  return rows;
}

/** Active tenants in external-ref order, a page at a time (the fleet rotation's cursor). */
export async function listActiveTenantRefs(
  db: Queryable,
  options: { after: string | null; limit: number },
): Promise<string[]> {
  const { rows } = await db.query<{ externalRef: string }>(
    `SELECT external_ref AS "externalRef" FROM tenants
      WHERE status = 'active' AND subaccount_id IS NOT NULL AND ($1::text IS NULL OR external_ref > $1::text)
      ORDER BY external_ref LIMIT $2::int`,
    [options.after, options.limit],
  );
  return rows.map((r) => r.externalRef);
}
