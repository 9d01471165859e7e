import type { Queryable } from './pool.js';

/**
 * The inbox of verified registry deliveries. The delivery id is the primary key, so a redelivery is
 * recorded once; `state` follows the processing workflow: pending (not started yet) → started → processed.
 */
export const InboxState = { pending: 'pending', started: 'started', processed: 'processed' } as const;
export type InboxState = (typeof InboxState)[keyof typeof InboxState];

export interface InboxRow {
  deliveryId: string;
  registrationId: string;
  webhookId: string;
  event: string;
  knownEvent: boolean;
  body: Record<string, unknown>;
  bodySha256: string;
  state: InboxState;
  workflowId: string;
  startAttempts: number;
  lastStartError: string | null;
  receivedAt: Date;
  startedAt: Date | null;
  processedAt: Date | null;
  processCount: number;
  outcome: Record<string, unknown> | null;
}

const COLUMNS = `delivery_id AS "deliveryId", registration_id AS "registrationId", webhook_id AS "webhookId", event,
  known_event AS "knownEvent", body, body_sha256 AS "bodySha256", state, workflow_id AS "workflowId",
  start_attempts AS "startAttempts", last_start_error AS "lastStartError", received_at AS "receivedAt",
  started_at AS "startedAt", processed_at AS "processedAt", process_count AS "processCount", outcome`;

export interface NewDelivery {
  deliveryId: string;
  registrationId: string;
  webhookId: string;
  event: string;
  knownEvent: boolean;
  /** The verified raw body, as text (stored as jsonb: it was parsed before this point). */
  bodyText: string;
  bodySha256: string;
  workflowId: string;
  /** The sweeper leaves the row alone this long, while the receiver's own start attempt runs. */
  sweepAfterSeconds: number;
}

/**
 * Records a delivery unless its id is known. `recorded`: this call wrote it; otherwise the body hash
 * stored under that id, so the caller can tell a redelivery (same bytes) from a conflicting body.
 */
export type InsertOutcome = { recorded: true } | { recorded: false; storedBodySha256: string };

export async function insertDeliveryIfAbsent(db: Queryable, delivery: NewDelivery): Promise<InsertOutcome> {
  const { rowCount } = await db.query(
    `INSERT INTO webhook_inbox (delivery_id, registration_id, webhook_id, event, known_event, body, body_sha256, state,
                                workflow_id, next_attempt_at)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::boolean, $6::jsonb, $7::text, 'pending', $8::text,
             now() + make_interval(secs => $9::int))
     ON CONFLICT (delivery_id) DO NOTHING`,
    [
      delivery.deliveryId,
      delivery.registrationId,
      delivery.webhookId,
      delivery.event,
      delivery.knownEvent,
      delivery.bodyText,
      delivery.bodySha256,
      delivery.workflowId,
      delivery.sweepAfterSeconds,
    ],
  );
  if (rowCount === 1) return { recorded: true };
  // A separate statement: the conflicting row may have been committed after the insert's snapshot.
  const { rows } = await db.query<{ bodySha256: string }>(
    `SELECT body_sha256 AS "bodySha256" FROM webhook_inbox WHERE delivery_id = $1::text`,
    [delivery.deliveryId],
  );
  // Pruned between the two statements: it was processed long ago, so this is the same delivery again.
  return { recorded: false, storedBodySha256: rows[0]?.bodySha256 ?? delivery.bodySha256 };
}

/**
 * Deletes up to `batch` processed deliveries older than the retention, oldest first, and says how
 * many. SKIP LOCKED: several gateways may prune at once without waiting on each other.
 */
export async function pruneProcessedDeliveries(
  db: Queryable,
  input: { olderThanSeconds: number; batch: number },
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_inbox WHERE delivery_id IN (
       SELECT delivery_id FROM webhook_inbox
        WHERE state = 'processed' AND processed_at < now() - make_interval(secs => $1::int)
        ORDER BY processed_at LIMIT $2::int FOR UPDATE SKIP LOCKED)`,
    [input.olderThanSeconds, input.batch],
  );
  return rowCount ?? 0;
}

async function findDelivery(db: Queryable, deliveryId: string): Promise<InboxRow | undefined> {
  const { rows } = await db.query<InboxRow>(`SELECT ${COLUMNS} FROM webhook_inbox WHERE delivery_id = $1::text`, [
    deliveryId,
  ]);
  return rows[0];
}

export class DeliveryNotFoundError extends Error {
  override name = 'DeliveryNotFoundError';
  constructor(readonly deliveryId: string) {
    super(`no delivery ${deliveryId} in the webhook inbox`);
  }
}

export async function getDelivery(db: Queryable, deliveryId: string): Promise<InboxRow> {
  const row = await findDelivery(db, deliveryId);
  if (!row) throw new DeliveryNotFoundError(deliveryId);
  return row;
}

export async function markDeliveryStarted(db: Queryable, deliveryId: string): Promise<void> {
  await db.query(
    `UPDATE webhook_inbox SET state = 'started', started_at = coalesce(started_at, now())
      WHERE delivery_id = $1::text AND state = 'pending'`,
    [deliveryId],
  );
}

export async function recordStartFailure(db: Queryable, deliveryId: string, error: string): Promise<void> {
  await db.query(
    `UPDATE webhook_inbox SET last_start_error = $2::text, start_attempts = start_attempts + 1
      WHERE delivery_id = $1::text AND state = 'pending'`,
    [deliveryId, error],
  );
}

/**
 * Claims pending deliveries due for a (re)start: pushes their next attempt back by `retryAfterSeconds`
 * in the same statement, so concurrent sweepers (several gateways) do not pick the same rows.
 */
export async function claimPendingDeliveries(
  db: Queryable,
  limit: number,
  retryAfterSeconds: number,
): Promise<Array<{ deliveryId: string; workflowId: string }>> {
  const { rows } = await db.query<{ deliveryId: string; workflowId: string }>(
    `UPDATE webhook_inbox SET next_attempt_at = now() + make_interval(secs => $2::int)
      WHERE delivery_id IN (
        SELECT delivery_id FROM webhook_inbox WHERE state = 'pending' AND next_attempt_at <= now()
         ORDER BY next_attempt_at LIMIT $1::int FOR UPDATE SKIP LOCKED)
      RETURNING delivery_id AS "deliveryId", workflow_id AS "workflowId"`,
    [limit, retryAfterSeconds],
  );
  return rows;
}

/** Marks the delivery processed; true only for the call that did it (a replayed activity gets false). */
export async function markDeliveryProcessed(
  db: Queryable,
  deliveryId: string,
  outcome: Record<string, unknown>,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_inbox SET state = 'processed', processed_at = now(), process_count = process_count + 1,
            outcome = $2::jsonb, started_at = coalesce(started_at, now())
      WHERE delivery_id = $1::text AND state <> 'processed'`,
    [deliveryId, JSON.stringify(outcome)],
  );
  return rowCount === 1;
}

export async function listDeliveries(db: Queryable, registrationId: string, limit = 50): Promise<InboxRow[]> {
  const { rows } = await db.query<InboxRow>(
    `SELECT ${COLUMNS} FROM webhook_inbox WHERE registration_id = $1::text ORDER BY received_at DESC LIMIT $2::int`,
    [registrationId, limit],
  );
  return rows;
}

export async function countInboxByState(db: Queryable): Promise<Record<InboxState, number>> {
  const { rows } = await db.query<{ state: InboxState; count: number }>(
    `SELECT state, count(*)::int AS count FROM webhook_inbox GROUP BY state`,
  );
  const counts: Record<InboxState, number> = { pending: 0, started: 0, processed: 0 };
  for (const row of rows) counts[row.state] = row.count;
  return counts;
}
