import type { Queryable } from './pool.js';

/** Sealed (AES-256-GCM) key tokens; plaintext never reaches the database. */
export async function insertKeySecret(db: Queryable, input: { tenantKeyId: string; masterKeyId: string; sealed: string }): Promise<void> {
  await db.query(
    `INSERT INTO key_secrets (tenant_key_id, master_key_id, sealed) VALUES ($1::bigint, $2::text, $3::text)
     ON CONFLICT (tenant_key_id) DO NOTHING`,
    [input.tenantKeyId, input.masterKeyId, input.sealed],
  );
}

export async function findKeySecret(db: Queryable, tenantKeyId: string): Promise<{ masterKeyId: string; sealed: string } | undefined> {
  const { rows } = await db.query<{ masterKeyId: string; sealed: string }>(
    `SELECT master_key_id AS "masterKeyId", sealed FROM key_secrets WHERE tenant_key_id = $1::bigint`,
    [tenantKeyId],
  );
  return rows[0];
}
