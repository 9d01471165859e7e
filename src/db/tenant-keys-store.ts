import { auditFrom, auditParams, type AuditEntry } from './audit-store.js';
import { eventFrom, eventParams, type NewEvent } from './events-store.js';
import { prepared, type Queryable } from './pool.js';

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
  /** New keys of this record that failed their first use (401) and were revoked for the next attempt. */
  rejectedKeys: number;
  createdAt: Date;
  activatedAt: Date | null;
  verifiedAt: Date | null;
  revokedAt: Date | null;
}

const COLUMNS = `id, external_ref AS "externalRef", slot, generation, key_name AS "keyName",
  platform_key_id AS "platformKeyId", status, fingerprint, create_attempts AS "createAttempts",
  rejected_keys AS "rejectedKeys", created_at AS "createdAt", activated_at AS "activatedAt",
    verified_at AS "verifiedAt", revoked_at AS "revokedAt"`;

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
): Promise<(TenantKeyRow & { fresh: boolean; tenantRestored: boolean }) | undefined> {
  // tenantRestored: the tenant's record was written again after a restore (restoreOnboardingRecord), so keys of this
  // generation made before it may be on the platform with no record.
  const { rows } = await db.query<TenantKeyRow & { fresh: boolean; tenantRestored: boolean }>(
    prepared(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
     SELECT $1::text, $2::text, $3::int, $4::text || '-a1', 'creating', 1
      WHERE NOT EXISTS (SELECT 1 FROM tenants WHERE external_ref = $1::text AND status = ANY($5::text[]))
     ON CONFLICT (external_ref, slot, generation) DO UPDATE SET updated_at = tenant_keys.updated_at
     RETURNING ${COLUMNS}, (xmax = 0) AS fresh, coalesce((SELECT records_restored_at IS NOT NULL FROM tenants
       WHERE external_ref = $1::text), false) AS "tenantRestored"`,
      [input.externalRef, input.slot, input.generation, input.keyName, closingStates],
    ),
  );
  return rows[0];
}

/**
 * The moment a token arrives: the record made active, its sealed value and the audit row, in one statement
 * (atomic: there is never an active record without its secret). Fenced: only the attempt that still holds the
 * newest claim (`claim`, the record's create_attempts when it began) stores; any other gets `fenced` and nothing
 * is written, its sealed value included (a secret never lands beside another attempt's key).
 */
export async function storeIssuedKey(
  db: Queryable,
  input: {
    id: string;
    claim: number;
    platformKeyId: string;
    fingerprint: string;
    masterKeyId: string;
    sealed: string;
  },
  audit: AuditEntry,
  /** Written in the same statement, only when this call activated the key. */
  event?: NewEvent,
): Promise<{ activated: boolean }> {
  const { rows } = await db.query<{ changed: string }>(
    prepared(
      `WITH changed AS (
       UPDATE tenant_keys SET platform_key_id = $2::text, fingerprint = $3::text, status = 'active',
         activated_at = now(), updated_at = now()
        WHERE id = $1::bigint AND status = 'creating' AND create_attempts = $6::int RETURNING id
     ), superseded AS (
       -- A create of an older generation of the slot still unfinished will never finish (generations only move on;
       -- a records restore can leave one): failed, so no attempt of it stores a key beside this one.
       UPDATE tenant_keys o SET status = 'failed', updated_at = now()
         FROM tenant_keys n
        WHERE n.id = (SELECT id FROM changed) AND o.external_ref = n.external_ref AND o.slot = n.slot
          AND o.generation < n.generation AND o.status = 'creating' AND o.platform_key_id IS NULL
     ), secret AS (
       INSERT INTO key_secrets (tenant_key_id, master_key_id, sealed)
       SELECT id, $4::text, $5::text FROM changed
       ON CONFLICT (tenant_key_id) DO UPDATE SET master_key_id = excluded.master_key_id, sealed = excluded.sealed
       RETURNING tenant_key_id
     ), audited AS (${auditFrom('changed', 7)})${event ? `, ${eventFrom('changed', 14)}` : ''}
     SELECT (SELECT count(*) FROM secret) AS secrets, (SELECT count(*) FROM changed) AS changed`,
      [
        input.id,
        input.platformKeyId,
        input.fingerprint,
        input.masterKeyId,
        input.sealed,
        input.claim,
        ...auditParams(audit),
        ...(event ? eventParams(event) : []),
      ],
    ),
  );
  return { activated: Number(rows[0]?.changed ?? 0) > 0 };
}

/**
 * A new key that failed its first use (401 after the proof's retries): the record goes back to `creating` for the
 * next attempt, its secret deleted, the rejection counted and audited, in one statement. Only the key named, only
 * while it is the record's active, never-verified key and the proving attempt still holds the newest claim: a
 * sibling's later key, one that worked, or a proof another attempt took over is never undone.
 */
export async function rejectIssuedKey(
  db: Queryable,
  input: { id: string; platformKeyId: string; claim: number },
  audit: AuditEntry,
): Promise<{ rejected: boolean; rejectedKeys: number }> {
  const { rows } = await db.query<{ rejected: boolean; rejectedKeys: number }>(
    `WITH changed AS (
       UPDATE tenant_keys SET status = 'creating', platform_key_id = NULL, fingerprint = NULL, activated_at = NULL,
         rejected_keys = rejected_keys + 1, updated_at = now()
        WHERE id = $1::bigint AND status = 'active' AND platform_key_id = $2::text AND verified_at IS NULL
          AND create_attempts = $3::int
        RETURNING id, rejected_keys
     ), secret AS (DELETE FROM key_secrets WHERE tenant_key_id IN (SELECT id FROM changed) RETURNING tenant_key_id),
        audited AS (${auditFrom('changed', 4)})
     SELECT EXISTS (SELECT 1 FROM changed) AS rejected,
            coalesce((SELECT rejected_keys FROM changed),
              (SELECT rejected_keys FROM tenant_keys WHERE id = $1::bigint), 0)
              AS "rejectedKeys",
            (SELECT count(*) FROM secret) AS secrets`,
    [input.id, input.platformKeyId, input.claim, ...auditParams(audit)],
  );
  return { rejected: Boolean(rows[0]?.rejected), rejectedKeys: Number(rows[0]?.rejectedKeys ?? 0) };
}

/** A key record with its sealed secret, for the one call that uses the token (verification). */
export async function findKeyWithSecret(
  db: Queryable,
  externalRef: string,
  slot: string,
  generation: number,
): Promise<(TenantKeyRow & { sealed: string | null }) | undefined> {
  const { rows } = await db.query<TenantKeyRow & { sealed: string | null }>(
    prepared(
      `SELECT k.*, (SELECT sealed FROM key_secrets WHERE tenant_key_id = k.id) AS sealed
       FROM (SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text
         AND generation = $3::int) k`,
      [externalRef, slot, generation],
    ),
  );
  return rows[0];
}

/**
 * Marks a key verified, with its audit row, the first time only; only while `platformKeyId` is the record's active
 * key (a sibling attempt may have rejected it meanwhile). True when the record is verified with that key.
 */
export async function markKeyVerifiedAudited(
  db: Queryable,
  id: string,
  platformKeyId: string,
  audit: AuditEntry,
): Promise<boolean> {
  const { rows } = await db.query<{ verified: boolean }>(
    prepared(
      `WITH changed AS (UPDATE tenant_keys SET verified_at = now()
        WHERE id = $1::bigint AND verified_at IS NULL AND status = 'active' AND platform_key_id = $2::text
      RETURNING id),
          audited AS (${auditFrom('changed', 3)})
     SELECT EXISTS (SELECT 1 FROM changed) OR EXISTS (SELECT 1 FROM tenant_keys WHERE id = $1::bigint
       AND status = 'active' AND platform_key_id = $2::text AND verified_at IS NOT NULL) AS verified`,
      [id, platformKeyId, ...auditParams(audit)],
    ),
  );
  return Boolean(rows[0]?.verified);
}

export async function findKeyRecord(
  db: Queryable,
  externalRef: string,
  slot: string,
  generation: number,
): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    prepared(
      `SELECT ${COLUMNS} FROM tenant_keys WHERE external_ref = $1::text AND slot = $2::text AND generation = $3::int`,
      [externalRef, slot, generation],
    ),
  );
  return rows[0];
}

export async function findKeyRecordOfId(db: Queryable, id: string): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    prepared(`SELECT ${COLUMNS} FROM tenant_keys WHERE id = $1::bigint`, [id]),
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

/**
 * Claims the next create attempt of a record still `creating` (the fencing token: create_attempts, taken with a
 * conditional update) and names its key after it, so a lost response can be found by name. Undefined when the
 * record is no longer `creating` (a sibling attempt stored its key, or the create was given up): nothing claimed.
 */
export async function claimKeyCreateAttempt(
  db: Queryable,
  id: string,
  namePrefix: string,
  /** A claim past this attempt too: the platform shows keys made under it that no record holds (a restore). */
  pastAttempt = 0,
): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `UPDATE tenant_keys SET create_attempts = greatest(create_attempts, $3::int) + 1,
            key_name = $2::text || '-a' || (greatest(create_attempts, $3::int) + 1)::text, updated_at = now()
      WHERE id = $1::bigint AND status = 'creating'
      RETURNING ${COLUMNS}`,
    [id, namePrefix, pastAttempt],
  );
  return rows[0];
}

/**
 * Takes over the proof of a stored, never-verified key (its storing attempt died or gave up): the next claim, taken
 * only while the record is active and unverified, with the sealed copy to prove. Undefined when there is nothing to
 * take over (verified meanwhile, or no longer active).
 */
export async function claimKeyProof(
  db: Queryable,
  id: string,
): Promise<{ claim: number; platformKeyId: string; sealed: string | null } | undefined> {
  const { rows } = await db.query<{ claim: number; platformKeyId: string; sealed: string | null }>(
    `WITH c AS (
       UPDATE tenant_keys SET create_attempts = create_attempts + 1, updated_at = now()
        WHERE id = $1::bigint AND status = 'active' AND verified_at IS NULL AND platform_key_id IS NOT NULL
        RETURNING id, create_attempts, platform_key_id
     )
     SELECT c.create_attempts AS claim, c.platform_key_id AS "platformKeyId",
            (SELECT sealed FROM key_secrets WHERE tenant_key_id = c.id) AS sealed
       FROM c`,
    [id],
  );
  return rows[0];
}

/**
 * Where a proof stands before its next call: `verified` (a sibling proved the key), `mine` (the key is still the
 * record's and this attempt holds the newest claim), or `lost` (another attempt took over, or the key is gone).
 */
export async function keyProofStanding(
  db: Queryable,
  input: { id: string; claim: number; platformKeyId: string },
): Promise<'verified' | 'mine' | 'lost'> {
  const { rows } = await db.query<{ standing: 'verified' | 'mine' | 'lost' }>(
    `SELECT CASE
       WHEN status = 'active' AND platform_key_id = $3::text AND verified_at IS NOT NULL THEN 'verified'
       WHEN status = 'active' AND platform_key_id = $3::text AND create_attempts = $2::int THEN 'mine'
       ELSE 'lost' END AS standing
       FROM tenant_keys WHERE id = $1::bigint`,
    [input.id, input.claim, input.platformKeyId],
  );
  return rows[0]?.standing ?? 'lost';
}

/** The newest generation recorded for a slot (any status), 0 when the slot has none. */
export async function findMaxGeneration(db: Queryable, externalRef: string, slot: string): Promise<number> {
  const { rows } = await db.query<{ generation: number }>(
    prepared(
      `SELECT coalesce(max(generation), 0)::int AS generation FROM tenant_keys WHERE ` +
        `external_ref = $1::text AND slot = $2::text`,
      [externalRef, slot],
    ),
  );
  return rows[0]!.generation;
}

/** Marks a key revoked (from active, unmanaged or revoking); a key already revoked keeps its first revoked_at. */
export async function markKeyRevoked(db: Queryable, id: string): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    prepared(
      `UPDATE tenant_keys SET status = 'revoked', revoked_at = coalesce(revoked_at, now()), updated_at = now()
      WHERE id = $1::bigint AND status IN ('active', 'unmanaged', 'revoking', 'revoked')
      RETURNING ${COLUMNS}`,
      [id],
    ),
  );
  return rows[0];
}

/**
 * Every key record of a tenant our own completed close revoked on the platform, as the records lost it (a restore):
 * marked revoked, and creates that will never finish failed. Returns how many records moved.
 */
export async function markClosedTenantKeys(db: Queryable, externalRef: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE tenant_keys SET status = CASE WHEN status = 'creating' THEN 'failed' ELSE 'revoked' END,
       revoked_at = CASE WHEN status = 'creating' THEN revoked_at ELSE coalesce(revoked_at, now()) END,
       updated_at = now()
      WHERE external_ref = $1::text AND status IN ('active', 'unmanaged', 'revoking', 'creating')`,
    [externalRef],
  );
  return rowCount ?? 0;
}

/** A key create that will never finish (rotation aborted or cancelled before the key came back). */
export async function markCreatingKeyFailed(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE tenant_keys SET status = 'failed', updated_at = now() WHERE id = $1::bigint AND status = 'creating'`,
    [id],
  );
}

/**
 * A key of ours the records lost (restored from a backup taken before it was made), recorded `unmanaged`: known, its
 * secret gone, so an adoption rotation replaces it. A record of its generation left `creating` (or `failed`) with no
 * key, by a create no run will finish, becomes it; nothing when the generation holds a key already.
 */
export async function recordLostKey(
  db: Queryable,
  input: { externalRef: string; slot: string; generation: number; keyName: string; platformKeyId: string },
): Promise<TenantKeyRow | undefined> {
  // A create of an older generation of the slot the records still hold unfinished will never finish (generations
  // only move on, and this one is live): failed by the same statement.
  const { rows } = await db.query<TenantKeyRow>(
    `WITH older AS (
       UPDATE tenant_keys SET status = 'failed', updated_at = now()
        WHERE external_ref = $1::text AND slot = $2::text AND generation < $3::int AND status = 'creating'
          AND platform_key_id IS NULL
     )
     INSERT INTO tenant_keys (external_ref, slot, generation, key_name, platform_key_id, status, activated_at)
     VALUES ($1::text, $2::text, $3::int, $4::text, $5::text, 'unmanaged', now())
     ON CONFLICT (external_ref, slot, generation) DO UPDATE SET status = 'unmanaged',
       platform_key_id = EXCLUDED.platform_key_id, key_name = EXCLUDED.key_name,
       activated_at = now(), updated_at = now()
       WHERE tenant_keys.status IN ('creating', 'failed') AND tenant_keys.platform_key_id IS NULL
     RETURNING ${COLUMNS}`,
    [input.externalRef, input.slot, input.generation, input.keyName, input.platformKeyId],
  );
  return rows[0];
}
