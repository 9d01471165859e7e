import type { Queryable } from './pool.js';

/** Key records: slot, generation, the platform's key id, status and a fingerprint. Never the token. */
export const KeyRecordStatus = {
  creating: 'creating',
  active: 'active',
  revoking: 'revoking',
  revoked: 'revoked',
  failed: 'failed',
} as const;
export type KeyRecordStatus = (typeof KeyRecordStatus)[keyof typeof KeyRecordStatus];

export interface TenantKeyRow {
  id: string;
  externalRef: string;
  slot: string;
  generation: number;
  keyName: string;
  platformKeyId: string | null;
  status: KeyRecordStatus;
  fingerprint: string | null;
  createAttempts: number;
  createdAt: Date;
  activatedAt: Date | null;
  verifiedAt: Date | null;
  revokedAt: Date | null;
}

const COLUMNS = `id, external_ref AS "externalRef", slot, generation, key_name AS "keyName",
  platform_key_id AS "platformKeyId", status, fingerprint, create_attempts AS "createAttempts",
  created_at AS "createdAt", activated_at AS "activatedAt", verified_at AS "verifiedAt", revoked_at AS "revokedAt"`;

export async function insertKeyRecordIfAbsent(
  db: Queryable,
  input: { externalRef: string; slot: string; generation: number; keyName: string },
): Promise<TenantKeyRow> {
  await db.query(
    `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status)
     VALUES ($1::text, $2::text, $3::int, $4::text, 'creating')
     ON CONFLICT (external_ref, slot, generation) DO NOTHING`,
    [input.externalRef, input.slot, input.generation, input.keyName],
  );
  return (await findKeyRecord(db, input.externalRef, input.slot, input.generation))!;
}

export async function findKeyRecord(db: Queryable, externalRef: string, slot: string, generation: number): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text AND generation = $3::int`,
    [externalRef, slot, generation],
  );
  return rows[0];
}

export async function listKeyRecords(db: Queryable, externalRef: string): Promise<TenantKeyRow[]> {
  const { rows } = await db.query<TenantKeyRow>(`SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text ORDER BY slot, generation`, [externalRef]);
  return rows;
}

/** The newest active key of a slot (the one whose secret `key reveal` returns). */
export async function findActiveKey(db: Queryable, externalRef: string, slot: string): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text AND status = 'active'
      ORDER BY generation DESC LIMIT 1`,
    [externalRef, slot],
  );
  return rows[0];
}

/** Counts a create attempt before the call and names it, so a lost response can be found by name. */
export async function beginKeyCreateAttempt(db: Queryable, id: string, namePrefix: string): Promise<TenantKeyRow> {
  const { rows } = await db.query<TenantKeyRow>(
    `UPDATE tenant_keys SET create_attempts = create_attempts + 1,
            key_name = $2::text || '-a' || (create_attempts + 1)::text
      WHERE id = $1::bigint AND status = 'creating'
      RETURNING ${COLUMNS}`,
    [id, namePrefix],
  );
  return rows[0]!;
}

export async function activateKeyRecord(db: Queryable, id: string, platformKeyId: string, fingerprint: string): Promise<void> {
  await db.query(
    `UPDATE tenant_keys SET platform_key_id = $2::text, fingerprint = $3::text, status = 'active', activated_at = now()
      WHERE id = $1::bigint AND status = 'creating'`,
    [id, platformKeyId, fingerprint],
  );
}

export async function markKeyVerified(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE tenant_keys SET verified_at = coalesce(verified_at, now()) WHERE id = $1::bigint`, [id]);
}

/** The newest generation recorded for a slot (any status), 0 when the slot has none. */
export async function findMaxGeneration(db: Queryable, externalRef: string, slot: string): Promise<number> {
  const { rows } = await db.query<{ generation: number }>(
    `SELECT coalesce(max(generation), 0)::int AS generation FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text`,
    [externalRef, slot],
  );
  return rows[0]!.generation;
}

/** Marks a key revoked (from active or revoking); a key already revoked keeps its first revoked_at. */
export async function markKeyRevoked(db: Queryable, id: string): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `UPDATE tenant_keys SET status = 'revoked', revoked_at = coalesce(revoked_at, now()), updated_at = now()
      WHERE id = $1::bigint AND status IN ('active', 'revoking', 'revoked')
      RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0];
}

/** A key create that will never finish (rotation aborted or cancelled before the key came back). */
export async function markCreatingKeyFailed(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE tenant_keys SET status = 'failed', updated_at = now() WHERE id = $1::bigint AND status = 'creating'`, [id]);
}
