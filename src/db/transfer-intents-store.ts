import { auditFrom, auditParams, type AuditEntry } from './audit-store.js';
import { eventsFrom } from './events-store.js';
import { prepared, type Queryable } from './pool.js';
import { INITIAL_TRANSFER, ONBOARDING_PURPOSE } from '../domain/onboarding.js';
import { CLOSING_STATES, type TenantStatus } from '../domain/tenant-rules.js';
import { topUpPurpose } from '../domain/top-up-ids.js';

/**
 * A transfer intent is written BEFORE the transfer call. Its idempotency key changes only after a
 * definite refusal (nothing moved); an ambiguous outcome keeps the key until reconciled.
 */
export const TransferState = {
  pending: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  unknown: 'unknown',
  needsOperator: 'needs_operator',
  cancelled: 'cancelled',
  /** A top-up refused by a spend cap: recorded and audited, never sent. */
  refused: 'refused',
} as const;
export type TransferState = (typeof TransferState)[keyof typeof TransferState];

export interface TransferIntentRow {
  id: string;
  externalRef: string;
  purpose: string;
  amountMicroUsd: string;
  idempotencyKey: string;
  state: TransferState;
  platformTransferId: string | null;
  failureCode: string | null;
  attempts: number;
  unknownSince: Date | null;
  resolution: string | null;
  /** initial | top-up | auto */
  kind: string;
  /** The caller's Idempotency-Key of a top-up (not the platform key, which is `idempotencyKey`). */
  callerKey: string | null;
  requestedBy: string | null;
  reason: string | null;
  /** The UTC day a top-up counts against its caps. */
  reservedOn: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = `id, external_ref AS "externalRef", purpose, amount_micro_usd::text AS "amountMicroUsd",
  idempotency_key AS "idempotencyKey", state, platform_transfer_id AS "platformTransferId",
  failure_code AS "failureCode", attempts, unknown_since AS "unknownSince", resolution,
  kind, caller_key AS "callerKey", requested_by AS "requestedBy", reason,
  to_char(reserved_on, 'YYYY-MM-DD') AS "reservedOn",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

/**
 * Writes the intent BEFORE the transfer call (audited when new), or returns the one recorded; one
 * statement either way (the no-op update makes RETURNING give the existing row).
 */
export async function insertTransferIntentIfAbsent(
  db: Queryable,
  input: IntentInput,
  audit?: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'>,
): Promise<{ row: TransferIntentRow; inserted: boolean }> {
  const written = await upsertIntent(db, input, audit, false);
  return { row: written.row!, inserted: written.inserted };
}

/**
 * The same write, but only while the tenant is not closing (CLOSING_STATES): the check a new transfer needs and the
 * intent in one statement. `closing`: the tenant's status when it refused (nothing written, whatever is recorded).
 */
export async function insertTransferIntentUnlessClosing(
  db: Queryable,
  input: IntentInput,
  audit: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'>,
): Promise<{ row: TransferIntentRow; inserted: boolean } | { closing: TenantStatus }> {
  const written = await upsertIntent(db, input, audit, true);
  return written.row ? { row: written.row, inserted: written.inserted } : { closing: written.tenantStatus! };
}

interface IntentInput {
  externalRef: string;
  purpose: string;
  amountMicroUsd: string;
  idempotencyKey: string;
}

async function upsertIntent(
  db: Queryable,
  input: IntentInput,
  audit: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'> | undefined,
  unlessClosing: boolean,
): Promise<{ row: TransferIntentRow | undefined; inserted: boolean; tenantStatus: TenantStatus | null }> {
  const entry = audit && {
    ...audit,
    action: 'transfer.intent',
    externalRef: input.externalRef,
    subject: input.idempotencyKey,
    details: { amountMicroUsd: input.amountMicroUsd, purpose: input.purpose },
  };
  const params: unknown[] = [
    input.externalRef,
    input.purpose,
    input.amountMicroUsd,
    input.idempotencyKey,
    ...(entry ? auditParams(entry) : []),
  ];
  // A refused tenant: the SELECT yields no row, so nothing is inserted and no conflict updates the recorded one.
  const closingAt = unlessClosing ? params.push(CLOSING_STATES) : 0;
  const open = unlessClosing
    ? `WHERE NOT EXISTS (SELECT 1 FROM tenants WHERE external_ref = $1::text AND status = ANY($${closingAt}::text[]))`
    : '';
  const { rows } = await db.query<TransferIntentRow & { inserted: boolean | null; tenantStatus: TenantStatus | null }>(
    prepared(
      `WITH changed AS (
       INSERT INTO transfer_intents (external_ref, purpose, amount_micro_usd, idempotency_key, state, attempts)
       SELECT $1::text, $2::text, $3::numeric, $4::text, 'pending', 1 ${open}
       ON CONFLICT (external_ref, purpose) DO UPDATE SET updated_at = transfer_intents.updated_at
       RETURNING ${COLUMNS}, (xmax = 0) AS inserted
     )${entry ? `, audited AS (${auditFrom('changed', 5, 'WHERE inserted')})` : ''}
     SELECT changed.*, ${unlessClosing ? '(SELECT status FROM tenants WHERE external_ref = $1::text)' : 'NULL'}
            AS "tenantStatus"
       FROM (SELECT 1) one LEFT JOIN changed ON true`,
      params,
    ),
  );
  const { inserted, tenantStatus, ...row } = rows[0]!;
  return { row: row.id === null ? undefined : row, inserted: inserted === true, tenantStatus };
}

export async function findTransferIntent(
  db: Queryable,
  externalRef: string,
  purpose: string,
): Promise<TransferIntentRow | undefined> {
  const { rows } = await db.query<TransferIntentRow>(
    `SELECT ${COLUMNS} FROM transfer_intents WHERE external_ref = $1::text AND purpose = $2::text`,
    [externalRef, purpose],
  );
  return rows[0];
}

export const TRANSFER_INTENT_COLUMNS = COLUMNS;

export async function listTransferIntents(db: Queryable, externalRef: string): Promise<TransferIntentRow[]> {
  const { rows } = await db.query<TransferIntentRow>(
    `SELECT ${COLUMNS} FROM transfer_intents WHERE external_ref = $1::text ORDER BY id`,
    [externalRef],
  );
  return rows;
}

/** One send of a transfer under an idempotency key (transfer_sends), claimed before the call. */
export interface TransferSend {
  claim: number;
  idempotencyKey: string;
  /** A send claimed longer ago than this and never ended is given up (its attempt died): longer than any lives. */
  leaseSeconds: number;
}

/**
 * Claims a send before the transfer call, in one statement: the intent's next send number, while the intent is
 * still open under `idempotencyKey`. Undefined when a sibling attempt has moved the intent on meanwhile (settled it,
 * or moved it to a fresh key): nothing to send under this key.
 */
export async function claimTransferSend(
  db: Queryable,
  intentId: string,
  idempotencyKey: string,
): Promise<number | undefined> {
  const { rows } = await db.query<{ claim: number }>(
    prepared(
      `WITH c AS (
       UPDATE transfer_intents SET send_claims = send_claims + 1
        WHERE id = $1::bigint AND idempotency_key = $2::text AND state IN ('pending', 'unknown')
        RETURNING send_claims
     )
     INSERT INTO transfer_sends (intent_id, claim, idempotency_key) SELECT $1::bigint, send_claims, $2::text FROM c
     RETURNING claim`,
      [intentId, idempotencyKey],
    ),
  );
  return rows[0]?.claim;
}

/** A send that ended without an outcome to record (a transient failure: nothing happened on the platform). */
export async function endTransferSend(db: Queryable, intentId: string, claim: number): Promise<void> {
  await db.query(`UPDATE transfer_sends SET ended_at = now() WHERE intent_id = $1::bigint AND claim = $2::int`, [
    intentId,
    claim,
  ]);
}

/** An intent's move: its new state and what the platform answered. */
export interface TransferChange {
  state: TransferState;
  platformTransferId?: string | null;
  failureCode?: string | null;
  resolution?: string | null;
  /** A definite refusal: the next attempt uses this new key. */
  nextIdempotencyKey?: string;
}

/** Moves the intent on, but only from a state in `from`: a late writer never undoes a settled outcome. */
export async function updateTransferIntent(
  db: Queryable,
  id: string,
  from: readonly TransferState[],
  change: TransferChange,
  /** Written by the same statement when the intent moved. */
  audit?: AuditEntry,
  /**
   * The send this outcome is of (claimTransferSend): ended by the same statement. A fresh key
   * (`nextIdempotencyKey`) is then taken only while the intent still has the key that send used and no other send
   * under it may still be in flight (not ended, claimed within `leaseSeconds`); else the key is kept (the next send
   * under it meets the refusal again, alone).
   */
  send?: TransferSend,
  /**
   * A send that succeeded: the parent's insufficient-balance state (src/domain/parent-shortfall.ts) is cleared by the
   * same statement when this move made the intent succeed, the state was set before `sentAt` (the parent's balance
   * covered what was refused) and its refused amount is at most this intent's. What it cleared comes back as
   * `shortfallCleared`.
   */
  clearShortfall?: { sentAt: Date; updatedBy: string },
): Promise<(TransferIntentRow & { shortfallCleared?: { since: Date; refusedMicroUsd: string } }) | undefined> {
  const sendAt = audit ? 8 + auditParams(audit).length : 8;
  const clearAt = sendAt + (send ? 3 : 0);
  // Takes no lock when there is nothing to clear (the SELECT finds no row): every successful send asks.
  const shortfallCtes = clearShortfall
    ? `, shortfall_old AS (
         SELECT insufficient_since AS since, insufficient_micro_usd AS refused FROM funding_parent
          WHERE id AND insufficient_since <= $${clearAt}::timestamptz
            AND insufficient_micro_usd <= (SELECT c."amountMicroUsd"::numeric FROM changed c
                                            WHERE c.state = 'succeeded' AND c.prev_state <> 'succeeded')
          FOR UPDATE
       ), shortfall AS (
         UPDATE funding_parent p SET insufficient_since = NULL, insufficient_micro_usd = NULL,
           updated_by = $${clearAt + 1}::text, updated_at = now()
           FROM shortfall_old WHERE p.id
         RETURNING shortfall_old.since, shortfall_old.refused::text AS refused
       )`
    : '';
  const shortfallColumns = clearShortfall
    ? `, (SELECT since FROM shortfall) AS shortfall_since, (SELECT refused FROM shortfall) AS shortfall_refused`
    : '';
  const sendCtes = send
    ? `, ended AS (UPDATE transfer_sends SET ended_at = now()
          WHERE intent_id = $1::bigint AND claim = $${sendAt}::int RETURNING claim)`
    : '';
  const mayTakeKey = send
    ? `(idempotency_key = $${sendAt + 1}::text AND NOT EXISTS (SELECT 1 FROM transfer_sends s
          WHERE s.intent_id = $1::bigint AND s.claim <> $${sendAt}::int AND s.idempotency_key = $${sendAt + 1}::text
            AND s.ended_at IS NULL AND s.started_at > now() - make_interval(secs => $${sendAt + 2}::int)))`
    : 'true';
  const { rows } = await db.query<
    TransferIntentRow & {
      prev_state: string;
      prev_code: string | null;
      shortfall_since?: Date | null;
      shortfall_refused?: string | null;
    }
  >(
    prepared(
      `WITH prev AS (
       SELECT id AS prev_id, state AS prev_state, failure_code AS prev_code, ${mayTakeKey} AS may_take_key
         FROM transfer_intents WHERE id = $1::bigint
     )${sendCtes}, changed AS (UPDATE transfer_intents SET
        state = $3::text,
        platform_transfer_id = coalesce($4::text, platform_transfer_id),
        failure_code = CASE WHEN $3::text = 'succeeded' THEN NULL ELSE coalesce($5::text, failure_code) END,
        resolution = coalesce($6::text, resolution),
        idempotency_key = CASE WHEN prev.may_take_key THEN coalesce($7::text, idempotency_key) ELSE idempotency_key END,
        attempts = attempts + CASE WHEN $7::text IS NULL OR NOT prev.may_take_key THEN 0 ELSE 1 END,
        unknown_since = CASE WHEN $3::text IN ('unknown', 'needs_operator') 
          THEN coalesce(unknown_since, now()) ELSE NULL END,
        updated_at = now()
      FROM prev
      WHERE id = prev.prev_id AND state = ANY($2::text[])
      RETURNING ${COLUMNS}, prev.prev_state, prev.prev_code),
        ${TRANSFER_EVENTS}${audit ? `, audited AS (${auditFrom('changed', 8)})` : ''}${shortfallCtes}
     SELECT changed.*${shortfallColumns} FROM changed`,
      [
        id,
        from,
        change.state,
        change.platformTransferId ?? null,
        change.failureCode ?? null,
        change.resolution ?? null,
        change.nextIdempotencyKey ?? null,
        ...(audit ? auditParams(audit) : []),
        ...(send ? [send.claim, send.idempotencyKey, send.leaseSeconds] : []),
        ...(clearShortfall ? [clearShortfall.sentAt.toISOString(), clearShortfall.updatedBy] : []),
      ],
    ),
  );
  if (!rows[0]) return undefined;
  const { prev_state: _state, prev_code: _code, shortfall_since: since, shortfall_refused: refused, ...row } = rows[0];
  return since && refused ? { ...row, shortfallCleared: { since, refusedMicroUsd: refused } } : row;
}

/**
 * The events a transfer's move writes in the same statement: succeeded and needs_operator when the
 * state changes to them; tenant.waiting_for_funds when the platform first refuses for the parent's
 * balance (not again on each retry while waiting).
 */
const TRANSFER_EVENT_TYPE = `CASE
    WHEN c.state = 'succeeded' AND c.prev_state <> 'succeeded' THEN 'transfer.succeeded'
    WHEN c.state = 'needs_operator' AND c.prev_state <> 'needs_operator' THEN 'transfer.needs_operator'
    WHEN c.state = 'pending' AND c."failureCode" = 'INSUFFICIENT_BALANCE' AND c.prev_code IS DISTINCT FROM
      'INSUFFICIENT_BALANCE'
      THEN 'tenant.waiting_for_funds'
  END`;
const TRANSFER_EVENTS = eventsFrom('changed c', {
  type: TRANSFER_EVENT_TYPE,
  externalRef: 'c."externalRef"',
  where: `${TRANSFER_EVENT_TYPE} IS NOT NULL`,
  // The first transfer is `initial` in events as everywhere (src/domain/onboarding.ts: INITIAL_TRANSFER).
  payload: `jsonb_build_object('externalRef', c."externalRef", 'transferId', c.id::text,
    'purpose', CASE WHEN c.purpose = '${ONBOARDING_PURPOSE}' THEN '${INITIAL_TRANSFER}' ELSE c.purpose END,
    'kind', c.kind,
    'amountMicroUsd', c."amountMicroUsd", 'state', c.state, 'idempotencyKey', c."idempotencyKey",
    'platformTransferId', c."platformTransferId", 'failureCode', c."failureCode", 'attempts', c.attempts)`,
});

/** The intent that holds an idempotency key (keys are unique across intents). */
export async function findTransferIntentByKey(
  db: Queryable,
  idempotencyKey: string,
): Promise<TransferIntentRow | undefined> {
  const { rows } = await db.query<TransferIntentRow>(
    `SELECT ${COLUMNS} FROM transfer_intents WHERE idempotency_key = $1::text`,
    [idempotencyKey],
  );
  return rows[0];
}

/**
 * An intent a running transfer holds, written again as it settles, when the records lost its row under the run (a
 * restore from a backup taken after the run reserved it): the same key, purpose, amount and request, with the
 * outcome the run saw, audited, in one statement. A row that exists again (a sibling wrote it) is left as it is.
 */
export async function rewriteTransferIntent(
  db: Queryable,
  intent: TransferIntentRow,
  change: TransferChange,
  audit: AuditEntry,
): Promise<TransferIntentRow | undefined> {
  const { rows } = await db.query<TransferIntentRow>(
    `WITH changed AS (
       INSERT INTO transfer_intents (external_ref, purpose, amount_micro_usd, idempotency_key, state, attempts, kind,
         caller_key, requested_by, reason, reserved_on, platform_transfer_id, failure_code, resolution, unknown_since)
       VALUES ($1::text, $2::text, $3::numeric, $4::text, $5::text, $6::int, $7::text, $8::text, $9::text, $10::text,
         $11::date, $12::text, $13::text, $14::text,
         CASE WHEN $5::text IN ('unknown', 'needs_operator') THEN now() END)
       ON CONFLICT DO NOTHING
       RETURNING ${COLUMNS}
     ), audited AS (${auditFrom('changed', 15)}),
     -- The tenant's new money waits for a drift check (migrations/0021): what else did the restore lose?
     held AS (
       UPDATE tenants SET money_held_since = now(), money_hold_reason = 'a transfer run found its record gone'
        WHERE external_ref = $1::text AND money_held_since IS NULL AND EXISTS (SELECT 1 FROM changed)
     )
     SELECT * FROM changed`,
    [
      intent.externalRef,
      intent.purpose,
      intent.amountMicroUsd,
      change.nextIdempotencyKey ?? intent.idempotencyKey,
      change.state,
      intent.attempts + (change.nextIdempotencyKey ? 1 : 0),
      intent.kind,
      intent.callerKey,
      intent.requestedBy,
      intent.reason,
      intent.reservedOn,
      change.platformTransferId ?? intent.platformTransferId,
      change.state === 'succeeded' ? null : (change.failureCode ?? intent.failureCode),
      change.resolution ?? intent.resolution,
      ...auditParams(audit),
    ],
  );
  return rows[0];
}

/**
 * The transfer drift or import recorded again under its key alone (`restored:<key>`, the records had lost its intent)
 * taken by the run that made it, under its own purpose: the key is a digest of the tenant and that purpose, so the
 * row is this run's, made; nothing is sent again. A top-up's purpose also gives the row its caller key.
 */
export async function claimRestoredKey(
  db: Queryable,
  input: { externalRef: string; idempotencyKey: string; purpose: string },
): Promise<TransferIntentRow | undefined> {
  const topUp = topUpPurpose('');
  const callerKey = input.purpose.startsWith(topUp) ? input.purpose.slice(topUp.length) : null;
  const { rows } = await db.query<TransferIntentRow>(
    `UPDATE transfer_intents SET purpose = $3::text, caller_key = coalesce($4::text, caller_key), updated_at = now()
      WHERE external_ref = $1::text AND idempotency_key = $2::text AND kind = 'restored'
      RETURNING ${COLUMNS}`,
    [input.externalRef, input.idempotencyKey, input.purpose, callerKey],
  );
  return rows[0];
}

/** An insert refused because a row of another purpose holds its idempotency key (a restored transfer's). */
export function isIdempotencyKeyTaken(error: unknown): boolean {
  const pg = error as { code?: unknown; constraint?: unknown };
  return pg?.code === '23505' && pg.constraint === 'transfer_intents_idempotency_key_key';
}

/**
 * A transfer the wallet lists under one of our keys that the records lost (restored from a backup), recorded again
 * as made: succeeded, never to be sent. Nothing when an intent already holds the key or the purpose.
 */
export async function recordRestoredTransfer(
  db: Queryable,
  input: {
    externalRef: string;
    purpose: string;
    kind: 'initial' | 'restored';
    amountMicroUsd: string;
    idempotencyKey: string;
    platformTransferId: string | null;
    /** When the platform made it, if its wallet shows it: the day its amount counts in the caps (else today). */
    createdAt?: string | undefined;
  },
): Promise<TransferIntentRow | undefined> {
  // A lost top-up counts in the caps as it did before the restore (reserved_on): on the day the platform made it.
  const { rows } = await db.query<TransferIntentRow>(
    `INSERT INTO transfer_intents (external_ref, purpose, amount_micro_usd, idempotency_key, state, attempts, kind,
       platform_transfer_id, resolution, reserved_on)
     VALUES ($1::text, $2::text, $3::numeric, $4::text, 'succeeded', 1, $5::text, $6::text, 'drift:restored',
       CASE WHEN $5::text = 'restored'
         THEN (coalesce($7::timestamptz, now()) AT TIME ZONE 'UTC')::date END)
     ON CONFLICT DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      input.externalRef,
      input.purpose,
      input.amountMicroUsd,
      input.idempotencyKey,
      input.kind,
      input.platformTransferId,
      input.createdAt ?? null,
    ],
  );
  return rows[0];
}
