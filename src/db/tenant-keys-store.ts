import { auditFrom, auditParams, type AuditEntry } from './audit-store.js';
import { eventFrom, eventParams, type NewEvent } from './events-store.js';
import type { Queryable } from './pool.js';

/** Key records: slot, generation, the platform's key id, status and a fingerprint. Never the token. */
export const KeyRecordStatus = {
  creating: 'creating',
  active: 'active',
  revoking: 'revoking',
  revoked: 'revoked',
  failed: 'failed',
  /** Active when its tenant was imported; we never saw its token (an adoption rotation replaces it). */
  unmanaged: 'unmanaged',
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

/**
 * The key record of a slot generation for a key create, in one statement: made when absent with its first
 * attempt begun (`-a1`, `fresh`), else the record as it stands (`fresh` false: an earlier attempt's orphans are
 * looked for, then `beginKeyCreateAttempt`). Nothing is made, and nothing returned, when the tenant is in one of
 * `closingStates`.
 */
export async function claimKeyRecord(
  db: Queryable,
  input: { externalRef: string; slot: string; generation: number; keyName: string },
  closingStates: readonly string[],
): Promise<(TenantKeyRow & { fresh: boolean }) | undefined> {
  const { rows } = await db.query<TenantKeyRow & { fresh: boolean }>(
    `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
     SELECT $1::text, $2::text, $3::int, $4::text || '-a1', 'creating', 1
      WHERE NOT EXISTS (SELECT 1 FROM tenants WHERE external_ref = $1::text AND status = ANY($5::text[]))
     ON CONFLICT (external_ref, slot, generation) DO UPDATE SET updated_at = tenant_keys.updated_at
     RETURNING ${COLUMNS}, (xmax = 0) AS fresh`,
    [input.externalRef, input.slot, input.generation, input.keyName, closingStates],
  );
  return rows[0];
}

/**
 * The moment a token arrives: its sealed value, the record made active, and the audit row, in one
 * statement (atomic: there is never an active record without its secret).
 */
export async function storeIssuedKey(
  db: Queryable,
  input: { id: string; platformKeyId: string; fingerprint: string; masterKeyId: string; sealed: string },
  audit: AuditEntry,
  /** Written in the same statement, only when this call activated the key (not on a repeat). */
  event?: NewEvent,
): Promise<{ activated: boolean }> {
  const { rows } = await db.query<{ changed: string }>(
    `WITH secret AS (
       INSERT INTO key_secrets (tenant_key_id, master_key_id, sealed) VALUES ($1::bigint, $4::text, $5::text)
       ON CONFLICT (tenant_key_id) DO NOTHING RETURNING tenant_key_id
     ), changed AS (
       UPDATE tenant_keys SET platform_key_id = $2::text, fingerprint = $3::text, status = 'active',
         activated_at = now(), updated_at = now()
        WHERE id = $1::bigint AND status = 'creating' RETURNING id
     ), audited AS (${auditFrom('changed', 6)})${event ? `, ${eventFrom('changed', 13)}` : ''}
     SELECT (SELECT count(*) FROM secret) AS secrets, (SELECT count(*) FROM changed) AS changed`,
    [
      input.id,
      input.platformKeyId,
      input.fingerprint,
      input.masterKeyId,
      input.sealed,
      ...auditParams(audit),
      ...(event ? eventParams(event) : []),
    ],
  );
  return { activated: Number(rows[0]?.changed ?? 0) > 0 };
}

/** A key record with its sealed secret, for the one call that uses the token (verification). */
export async function findKeyWithSecret(
  db: Queryable,
  externalRef: string,
  slot: string,
  generation: number,
): Promise<(TenantKeyRow & { sealed: string | null }) | undefined> {
  const { rows } = await db.query<TenantKeyRow & { sealed: string | null }>(
    `SELECT k.*, (SELECT sealed FROM key_secrets WHERE tenant_key_id = k.id) AS sealed
       FROM (SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text AND generation = $3::int) k`,
    [externalRef, slot, generation],
  );
  return rows[0];
}

/** Marks a key verified, with its audit row, the first time only. */
export async function markKeyVerifiedAudited(db: Queryable, id: string, audit: AuditEntry): Promise<void> {
  await db.query(
    `WITH changed AS (UPDATE tenant_keys SET verified_at = now() WHERE id = $1::bigint AND verified_at IS NULL
      RETURNING id),
          audited AS (${auditFrom('changed', 2)})
     SELECT count(*) FROM changed`,
    [id, ...auditParams(audit)],
  );
}

export async function findKeyRecord(
  db: Queryable,
  externalRef: string,
  slot: string,
  generation: number,
): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text AND generation = $3::int`,
    [externalRef, slot, generation],
  );
  return rows[0];
}

export async function listKeyRecords(db: Queryable, externalRef: string): Promise<TenantKeyRow[]> {
  const { rows } = await db.query<TenantKeyRow>(
    `SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text ORDER BY slot, generation`,
    [externalRef],
  );
  return rows;
}

/** The newest active key of a slot (the one whose secret `key reveal` returns). */
export async function findActiveKey(
  db: Queryable,
  externalRef: string,
  slot: string,
): Promise<TenantKeyRow | undefined> {
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

/** The newest generation recorded for a slot (any status), 0 when the slot has none. */
export async function findMaxGeneration(db: Queryable, externalRef: string, slot: string): Promise<number> {
  const { rows } = await db.query<{ generation: number }>(
    `SELECT coalesce(max(generation), 0)::int AS generation FROM tenant_keys WHERE ` +
      `external_ref = $1::text AND slot = $2::text`,
    [externalRef, slot],
  );
  return rows[0]!.generation;
}

/** Marks a key revoked (from active, unmanaged or revoking); a key already revoked keeps its first revoked_at. */
export async function markKeyRevoked(db: Queryable, id: string): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `UPDATE tenant_keys SET status = 'revoked', revoked_at = coalesce(revoked_at, now()), updated_at = now()
      WHERE id = $1::bigint AND status IN ('active', 'unmanaged', 'revoking', 'revoked')
      RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0];
}

/** A key create that will never finish (rotation aborted or cancelled before the key came back). */
export async function markCreatingKeyFailed(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE tenant_keys SET status = 'failed', updated_at = now() WHERE id = $1::bigint AND status = 'creating'`,
    [id],
  );
}
