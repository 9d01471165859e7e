import { auditFrom, auditParams, type AuditEntry } from './audit-store.js';
import type { Queryable } from './pool.js';

/** The parent's platform keys: sealed secret, status, fingerprint. The token itself never leaves the vault. */
export type ParentKeyStatus = 'creating' | 'ready' | 'current' | 'previous' | 'revoked' | 'failed';

export interface ParentKeyRow {
  id: string;
  platformKeyId: string | null;
  keyName: string;
  status: ParentKeyStatus;
  source: 'import' | 'rotation';
  fingerprint: string | null;
  createdAt: Date;
  currentSince: Date | null;
  revokedAt: Date | null;
}

export type ParentKeyWithSecret = ParentKeyRow & { sealed: string };

const COLUMNS = `id::text AS id, platform_key_id AS "platformKeyId", key_name AS "keyName", status, source, fingerprint,
  created_at AS "createdAt", current_since AS "currentSince", revoked_at AS "revokedAt"`;

/** The AAD of a sealed parent key: its row, so a sealed value moved to another row does not open. */
export function parentKeyAad(rowId: string): string {
  return JSON.stringify(['parent-key', rowId]);
}

export async function findCurrentParentKey(db: Queryable): Promise<ParentKeyWithSecret | undefined> {
  const { rows } = await db.query<ParentKeyWithSecret>(
    `SELECT ${COLUMNS}, sealed FROM parent_keys WHERE status = 'current'`,
  );
  return rows[0];
}

export async function findParentKey(db: Queryable, id: string): Promise<ParentKeyWithSecret | undefined> {
  const { rows } = await db.query<ParentKeyWithSecret>(
    `SELECT ${COLUMNS}, sealed FROM parent_keys WHERE id = $1::bigint`,
    [id],
  );
  return rows[0];
}

export async function listParentKeys(db: Queryable): Promise<ParentKeyRow[]> {
  const { rows } = await db.query<ParentKeyRow>(`SELECT ${COLUMNS} FROM parent_keys ORDER BY id`);
  return rows;
}

/** A new row id first: the AAD names it, so the sealed value is computed for that row. */
export async function nextParentKeyRowId(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ id: string }>(`SELECT nextval('parent_keys_id_seq')::text AS id`);
  return rows[0]!.id;
}

/**
 * Imports a key as the current one; the one it replaces (if any) becomes `previous`. Idempotent on the
 * fingerprint: importing the current key again changes nothing. With `onlyIfNone`, imports only when no key is
 * current (the bootstrap from PLATFORM_API_KEY). Returns the current row and whether this call imported it.
 */
export async function importParentKey(
  db: Queryable,
  input: { rowId: string; fingerprint: string; masterKeyId: string; sealed: string; onlyIfNone: boolean },
  audit: AuditEntry,
): Promise<{ imported: boolean }> {
  const { rows } = await db.query<{ imported: string }>(
    `WITH demoted AS (
       UPDATE parent_keys SET status = 'previous', updated_at = now()
        WHERE status = 'current' AND NOT $5::boolean
          AND NOT EXISTS (SELECT 1 FROM parent_keys WHERE fingerprint = $2::text) RETURNING id
     ), inserted AS (
       INSERT INTO parent_keys (id, key_name, status, source, fingerprint, master_key_id, sealed, current_since)
       SELECT $1::bigint, 'import-' || $1::text, 'current', 'import', $2::text, $3::text, $4::text, now()
        WHERE NOT EXISTS (SELECT 1 FROM parent_keys WHERE fingerprint = $2::text)
          AND ($5::boolean = false OR NOT EXISTS (SELECT 1 FROM parent_keys WHERE status = 'current'))
          AND (SELECT count(*) FROM demoted) >= 0
       RETURNING id
     ), audited AS (${auditFrom('inserted', 6)})
     SELECT (SELECT count(*) FROM inserted)::text AS imported`,
    [input.rowId, input.fingerprint, input.masterKeyId, input.sealed, input.onlyIfNone, ...auditParams(audit)],
  );
  return { imported: rows[0]?.imported === '1' };
}

/** The rotation's new key row, before the create call (its name finds a lost create's key). */
export async function insertCreatingParentKey(db: Queryable, keyName: string): Promise<ParentKeyRow> {
  const { rows } = await db.query<ParentKeyRow>(
    `INSERT INTO parent_keys (key_name, status, source) VALUES ($1::text, 'creating', 'rotation')
     ON CONFLICT (key_name) DO UPDATE SET updated_at = parent_keys.updated_at
     RETURNING ${COLUMNS}`,
    [keyName],
  );
  return rows[0]!;
}

/**
 * Claims the next create attempt of a `creating` record (the fencing token: create_attempts, taken with a conditional
 * update). Undefined when the record is no longer `creating` (a sibling stored its key, or the rotation gave up).
 */
export async function claimParentKeyCreateAttempt(db: Queryable, id: string): Promise<number | undefined> {
  const { rows } = await db.query<{ claim: number }>(
    `UPDATE parent_keys SET create_attempts = create_attempts + 1, updated_at = now()
      WHERE id = $1::bigint AND status = 'creating' RETURNING create_attempts AS claim`,
    [id],
  );
  return rows[0]?.claim;
}

/**
 * The moment the new token arrives: sealed and stored with its audit row in one statement, only by the attempt that
 * still holds the newest claim (`claim`). False when fenced: nothing was written.
 */
export async function storeCreatedParentKey(
  db: Queryable,
  input: { id: string; claim: number; platformKeyId: string; fingerprint: string; masterKeyId: string; sealed: string },
  audit: AuditEntry,
): Promise<boolean> {
  const { rows } = await db.query<{ changed: string }>(
    `WITH changed AS (
       UPDATE parent_keys SET platform_key_id = $2::text, fingerprint = $3::text, master_key_id = $4::text,
              sealed = $5::text, status = 'ready', updated_at = now()
        WHERE id = $1::bigint AND status = 'creating' AND create_attempts = $6::int RETURNING id
     ), audited AS (${auditFrom('changed', 7)})
     SELECT count(*) AS changed FROM changed`,
    [
      input.id,
      input.platformKeyId,
      input.fingerprint,
      input.masterKeyId,
      input.sealed,
      input.claim,
      ...auditParams(audit),
    ],
  );
  return Number(rows[0]?.changed ?? 0) > 0;
}

/**
 * Makes `id` the current key: the current one becomes `previous`. Both changes and the audit row in one statement
 * (the unique index allows one current key at any instant). Idempotent once `id` is current.
 */
export async function makeParentKeyCurrent(db: Queryable, id: string, audit: AuditEntry): Promise<void> {
  await db.query(
    `WITH demoted AS (
       UPDATE parent_keys SET status = 'previous', updated_at = now()
        WHERE status = 'current' AND id <> $1::bigint RETURNING id
     ), promoted AS (
       UPDATE parent_keys SET status = 'current', current_since = now(), updated_at = now()
        WHERE id = $1::bigint AND status IN ('ready', 'previous') AND sealed IS NOT NULL
          AND (SELECT count(*) FROM demoted) >= 0
       RETURNING id
     ), audited AS (${auditFrom('promoted', 2)})
     SELECT count(*) FROM promoted`,
    [id, ...auditParams(audit)],
  );
}

export async function setParentPlatformKeyId(db: Queryable, id: string, platformKeyId: string): Promise<void> {
  await db.query(
    `UPDATE parent_keys SET platform_key_id = $2::text, updated_at = now()
      WHERE id = $1::bigint AND platform_key_id IS NULL`,
    [id, platformKeyId],
  );
}

export async function markParentKeyRevoked(db: Queryable, id: string, audit: AuditEntry): Promise<void> {
  await db.query(
    `WITH changed AS (
       UPDATE parent_keys SET status = 'revoked', revoked_at = now(), updated_at = now()
        WHERE id = $1::bigint AND status IN ('previous', 'ready', 'creating') RETURNING id
     ), audited AS (${auditFrom('changed', 2)})
     SELECT count(*) FROM changed`,
    [id, ...auditParams(audit)],
  );
}

export async function markParentKeyFailed(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE parent_keys SET status = 'failed', updated_at = now() WHERE id = $1::bigint AND status = 'creating'`,
    [id],
  );
}

/** A process's heartbeat: which parent key row it uses now. */
export async function reportProcessCredential(
  db: Queryable,
  input: { processId: string; kind: 'worker' | 'gateway' | 'cli'; parentKeyId: string | null },
): Promise<void> {
  await db.query(
    `INSERT INTO process_credentials (process_id, kind, parent_key_id) VALUES ($1::text, $2::text, $3::bigint)
     ON CONFLICT (process_id) DO UPDATE SET parent_key_id = EXCLUDED.parent_key_id, seen_at = now()`,
    [input.processId, input.kind, input.parentKeyId],
  );
}

export async function forgetProcessCredential(db: Queryable, processId: string): Promise<void> {
  await db.query(`DELETE FROM process_credentials WHERE process_id = $1::text`, [processId]);
}

export interface ProcessCredentialRow {
  processId: string;
  kind: string;
  parentKeyId: string | null;
  seenAgoMs: number;
}

/** Processes that reported within `freshMs` (on the database's clock), with the key each uses. */
export async function listLiveProcesses(db: Queryable, freshMs: number): Promise<ProcessCredentialRow[]> {
  const { rows } = await db.query<ProcessCredentialRow>(
    `SELECT process_id AS "processId", kind, parent_key_id::text AS "parentKeyId",
            (extract(epoch FROM now() - seen_at) * 1000)::int AS "seenAgoMs"
       FROM process_credentials WHERE seen_at > now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY process_id`,
    [freshMs],
  );
  return rows;
}

export async function findParentKeyByFingerprint(
  db: Queryable,
  fingerprint: string,
): Promise<ParentKeyRow | undefined> {
  const { rows } = await db.query<ParentKeyRow>(`SELECT ${COLUMNS} FROM parent_keys WHERE fingerprint = $1::text`, [
    fingerprint,
  ]);
  return rows[0];
}

/**
 * Records which platform key one of our records is (an operator named it: `parent-key import --key-id`,
 * `parent-key identify`), with its audit row in the same statement. Only a record whose platform id is still
 * unknown changes; an id already recorded for another record is refused by the unique index (`conflict`).
 */
export async function recordParentPlatformKeyId(
  db: Queryable,
  input: { rowId: string; platformKeyId: string },
  audit: AuditEntry,
): Promise<'recorded' | 'already' | 'other_id' | 'conflict' | 'missing'> {
  try {
    const { rows } = await db.query<{ changed: string; current: string | null; found: string }>(
      `WITH changed AS (
         UPDATE parent_keys SET platform_key_id = $2::text, updated_at = now()
          WHERE id = $1::bigint AND platform_key_id IS NULL RETURNING id
       ), audited AS (${auditFrom('changed', 3)})
       SELECT (SELECT count(*) FROM changed)::text AS changed,
              (SELECT platform_key_id FROM parent_keys WHERE id = $1::bigint) AS current,
              (SELECT count(*) FROM parent_keys WHERE id = $1::bigint)::text AS found`,
      [input.rowId, input.platformKeyId, ...auditParams(audit)],
    );
    const row = rows[0]!;
    if (row.changed === '1') return 'recorded';
    if (row.found === '0') return 'missing';
    return row.current === input.platformKeyId ? 'already' : 'other_id';
  } catch (error) {
    if ((error as { code?: string }).code === '23505') return 'conflict';
    throw error;
  }
}
