import type { Queryable } from './pool.js';

/** Sealed (AES-256-GCM) key tokens; plaintext never reaches the database. Written by storeIssuedKey. */
export async function findKeySecret(
  db: Queryable,
  tenantKeyId: string,
): Promise<{ masterKeyId: string; sealed: string } | undefined> {
  const { rows } = await db.query<{ masterKeyId: string; sealed: string }>(
    `SELECT master_key_id AS "masterKeyId", sealed FROM key_secrets WHERE tenant_key_id = $1::bigint`,
    [tenantKeyId],
  );
  return rows[0];
}
