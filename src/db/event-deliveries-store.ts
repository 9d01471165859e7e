import type { Queryable } from './pool.js';
import type { DeliveryState } from '../domain/events.js';

/** One row per (subscription, event): what was sent, how often, and how it ended. Never a body or a secret. */
export interface DeliveryRow {
  id: string;
  subscriptionId: string;
  eventId: string;
  type: string;
  stream: string;
  seq: string;
  state: DeliveryState;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  replays: number;
  occurredAt: Date;
  createdAt: Date;
  deliveredAt: Date | null;
  failedAt: Date | null;
}

const COLUMNS = `d.id, d.subscription_id AS "subscriptionId", d.event_id::text AS "eventId", o.type,
  d.stream, d.seq::text AS seq,
  d.state, d.attempts, d.last_status AS "lastStatus", d.last_error AS "lastError", d.replays,
  o.occurred_at AS "occurredAt", d.created_at AS "createdAt", d.delivered_at AS "deliveredAt",
  d.failed_at AS "failedAt"`;

/** The next delivery of a stream, oldest first: a later event of a tenant is never sent before an earlier one. */
export async function findNextPendingDelivery(
  db: Queryable,
  subscriptionId: string,
  stream: string,
): Promise<DeliveryRow | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM event_deliveries d JOIN event_outbox o ON o.id = d.event_id
      WHERE d.subscription_id = $1::text AND d.stream = $2::text AND d.state = 'pending'
      ORDER BY d.seq LIMIT 1`,
    [subscriptionId, stream],
  );
  return rows[0];
}

export async function findDelivery(db: Queryable, id: string): Promise<DeliveryRow | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM event_deliveries d JOIN event_outbox o ON o.id = d.event_id WHERE d.id = $1::bigint`,
    [id],
  );
  return rows[0];
}

/** Counts an attempt and what it got (status or error), before the retry decision. */
export async function recordAttempt(
  db: Queryable,
  id: string,
  outcome: { status: number | null; error: string | null },
): Promise<void> {
  await db.query(
    `UPDATE event_deliveries SET attempts = attempts + 1, last_status = $2::int, last_error = $3::text,
            first_attempt_at = coalesce(first_attempt_at, now()), updated_at = now()
      WHERE id = $1::bigint`,
    [id, outcome.status, outcome.error],
  );
}

/** Settles a pending delivery; a settled one is left as it is (a repeated activity changes nothing). */
export async function settleDelivery(
  db: Queryable,
  id: string,
  state: 'delivered' | 'failed',
): Promise<DeliveryRow | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH d AS (
       UPDATE event_deliveries SET state = $2::text, updated_at = now(),
              delivered_at = CASE WHEN $2::text = 'delivered' THEN now() ELSE delivered_at END,
              failed_at = CASE WHEN $2::text = 'failed' THEN now() ELSE failed_at END
        WHERE id = $1::bigint AND state = 'pending' RETURNING *
     )
     SELECT ${COLUMNS} FROM d JOIN event_outbox o ON o.id = d.event_id`,
    [id, state],
  );
  return rows[0];
}

export async function listDeliveries(
  db: Queryable,
  filter: { state?: DeliveryState; subscriptionId?: string; eventId?: string; limit?: number; createdBy?: string } = {},
): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM event_deliveries d JOIN event_outbox o ON o.id = d.event_id
      WHERE ($1::text IS NULL OR d.state = $1::text) AND ($2::text IS NULL OR d.subscription_id = $2::text)
        AND ($3::bigint IS NULL OR d.event_id = $3::bigint)
        AND ($5::text IS NULL OR d.subscription_id IN (SELECT id FROM event_subscriptions WHERE created_by = $5::text))
      ORDER BY d.id DESC LIMIT $4::int`,
    [
      filter.state ?? null,
      filter.subscriptionId ?? null,
      filter.eventId ?? null,
      filter.limit ?? 200,
      filter.createdBy ?? null,
    ],
  );
  return rows;
}

/**
 * Puts deliveries back to pending for a replay (same event, same webhook-id): of one event, or of
 * every event since a time; only live subscriptions. Returns the streams to wake.
 */
export async function reopenDeliveries(
  db: Queryable,
  filter: { eventId?: string; since?: Date; subscriptionId?: string; createdBy?: string },
): Promise<{ reopened: number; streams: Array<{ subscriptionId: string; stream: string }> }> {
  const { rows } = await db.query<{ subscriptionId: string; stream: string }>(
    `UPDATE event_deliveries d SET state = 'pending', replays = replays + 1, updated_at = now(), failed_at = NULL
       FROM event_outbox o, event_subscriptions s
      WHERE o.id = d.event_id AND s.id = d.subscription_id AND s.status = 'active'
        AND ($1::bigint IS NULL OR d.event_id = $1::bigint)
        AND ($2::timestamptz IS NULL OR o.occurred_at >= $2::timestamptz)
        AND ($3::text IS NULL OR d.subscription_id = $3::text)
        AND ($4::text IS NULL OR s.created_by = $4::text)
        AND d.state <> 'pending'
      RETURNING d.subscription_id AS "subscriptionId", d.stream`,
    [filter.eventId ?? null, filter.since ?? null, filter.subscriptionId ?? null, filter.createdBy ?? null],
  );
  const streams = new Map(rows.map((r) => [`${r.subscriptionId}\u0000${r.stream}`, r]));
  return { reopened: rows.length, streams: [...streams.values()] };
}

/** Counts per event type and delivery state (the gateway's metrics). */
export async function countDeliveriesByTypeAndState(
  db: Queryable,
): Promise<Array<{ type: string; state: DeliveryState; count: number }>> {
  const { rows } = await db.query<{ type: string; state: DeliveryState; count: number }>(
    `SELECT o.type, d.state, count(*)::int AS count FROM event_deliveries d JOIN event_outbox o ON o.id = d.event_id
      GROUP BY o.type, d.state ORDER BY o.type, d.state`,
  );
  return rows;
}

export async function countEventsByType(db: Queryable): Promise<Array<{ type: string; count: number }>> {
  const { rows } = await db.query<{ type: string; count: number }>(
    `SELECT type, count(*)::int AS count FROM event_outbox GROUP BY type ORDER BY type`,
  );
  return rows;
}
