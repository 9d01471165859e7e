import type pg from 'pg';
import { PARENT_STREAM, type EventType } from '../domain/events.js';
import { TOKEN_PREFIXES } from '../platform/secret-token.js';
import type { Queryable } from './pool.js';

/**
 * The transactional outbox. An event is written by `emitEvent` on the transaction client of the
 * change it records — it takes a PoolClient, never the pool — so the two commit or roll back
 * together: no event without its change, no change without its event.
 */
export interface NewEvent {
  type: EventType;
  /** The tenant the event is about (its stream, delivered in order); null for parent-wide events. */
  externalRef: string | null;
  /** Ids, states, amounts as strings, fingerprints. Never a token or secret (refused). */
  data: Record<string, unknown>;
}

export interface OutboxRow {
  id: string;
  type: EventType;
  stream: string;
  seq: string;
  externalRef: string | null;
  payload: Record<string, unknown>;
  occurredAt: Date;
  dispatchedAt: Date | null;
}

export class EventPayloadError extends Error {
  override name = 'EventPayloadError';
}

// Credential prefixes of the platform and of Standard Webhooks secrets: an event body is sent out, so none may
// ride in it.
const FORBIDDEN = new RegExp(`(?<![A-Za-z0-9])(${[...TOKEN_PREFIXES, 'whsec_'].join('|')})[A-Za-z0-9]`);

function assertNoSecret(data: Record<string, unknown>): void {
  if (FORBIDDEN.test(JSON.stringify(data)))
    throw new EventPayloadError('an event payload must never carry a token or secret');
}

/** Public id of an event: also the Standard Webhooks `webhook-id` of every delivery of it (and of replays). */
export function eventIdOf(id: string): string {
  return `evt_${id}`;
}

export function parseEventId(value: string): string | undefined {
  const match = /^(?:evt_)?([1-9][0-9]{0,17})$/.exec(value);
  return match?.[1];
}

const COLUMNS = `id, type, stream, seq::text AS seq, external_ref AS "externalRef", payload,
  occurred_at AS "occurredAt", dispatched_at AS "dispatchedAt"`;

/**
 * Writes one event in the caller's transaction. The stream's row is updated first: its lock, held
 * to COMMIT, makes seq order the commit order within a tenant's stream.
 */
export async function emitEvent(tx: pg.PoolClient, event: NewEvent): Promise<OutboxRow> {
  const { rows } = await tx.query<OutboxRow>(
    `WITH s AS (
       INSERT INTO event_streams (stream, last_seq) VALUES ($2::text, 1)
       ON CONFLICT (stream) DO UPDATE SET last_seq = event_streams.last_seq + 1
       RETURNING last_seq
     )
     INSERT INTO event_outbox (type, stream, seq, external_ref, payload)
     SELECT $1::text, $2::text, s.last_seq, $3::text, $4::jsonb FROM s
     RETURNING ${COLUMNS}`,
    eventParams(event),
  );
  return rows[0]!;
}

/**
 * The same write as `emitEvent`, as two CTEs (`event_seq`, `event_row`) of the statement that makes
 * the change: one event when the CTE named `source` yields a row, none when it yields none. The change
 * and its event then commit together without a transaction of their own (BEGIN, the change, the event
 * and COMMIT were four round trips; this is one). `extra` is a jsonb expression over `source`'s row
 * merged into the payload, for what only the change knows (an id it returns); it must name no secret.
 * Parameters from `$firstParam`: `eventParams(event)`.
 */
export function eventFrom(source: string, firstParam: number, extra?: string): string {
  const p = (i: number) => `$${firstParam + i}`;
  const payload = extra ? `${p(3)}::jsonb || ${extra}` : `${p(3)}::jsonb`;
  return `event_seq AS (
       INSERT INTO event_streams (stream, last_seq) SELECT ${p(1)}::text, 1 FROM (SELECT 1 FROM ${source} LIMIT 1) one
       ON CONFLICT (stream) DO UPDATE SET last_seq = event_streams.last_seq + 1
       RETURNING last_seq
     ), event_row AS (
       INSERT INTO event_outbox (type, stream, seq, external_ref, payload)
       SELECT ${p(0)}::text, ${p(1)}::text, event_seq.last_seq, ${p(2)}::text, ${payload}
         FROM event_seq, (SELECT * FROM ${source} LIMIT 1) src
       RETURNING id
     )`;
}

export function eventParams(event: NewEvent): unknown[] {
  assertNoSecret(event.data);
  return [event.type, event.externalRef ?? PARENT_STREAM, event.externalRef, JSON.stringify(event.data)];
}

export async function findEvent(db: Queryable, id: string): Promise<OutboxRow | undefined> {
  const { rows } = await db.query<OutboxRow>(`SELECT ${COLUMNS} FROM event_outbox WHERE id = $1::bigint`, [id]);
  return rows[0];
}

/**
 * Fans undispatched events out into delivery rows for every live subscription that wants them (one
 * row per subscription and event, never two), in one statement. The events stay undispatched until
 * `markDispatched`, after their streams were told (`listPendingStreams`): a crash in between only
 * repeats idempotent work. Returns the ids of the events taken.
 */
export async function fanOutEvents(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ eventIds: string[] | null }>(
    `WITH batch AS (
       SELECT id, type, stream, seq, occurred_at FROM event_outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT $1::int
     ), fanned AS (
       INSERT INTO event_deliveries (subscription_id, event_id, stream, seq, state)
       SELECT s.id, b.id, b.stream, b.seq, 'pending'
         FROM batch b JOIN event_subscriptions s
           ON s.status = 'active' AND s.created_at <= b.occurred_at AND ('*' = ANY (s.types) OR b.type = ANY (s.types))
       ON CONFLICT (subscription_id, event_id) DO NOTHING
       RETURNING 1
     )
     SELECT (SELECT array_agg(id::text) FROM batch) AS "eventIds", (SELECT count(*) FROM fanned) AS fanned`,
    [limit],
  );
  return rows[0]?.eventIds ?? [];
}

/** Streams with pending deliveries (for a dispatcher that restarted after fanning out but before telling them). */
export async function listPendingStreams(
  db: Queryable,
  eventIds: readonly string[],
): Promise<Array<{ subscriptionId: string; stream: string }>> {
  const { rows } = await db.query<{ subscriptionId: string; stream: string }>(
    `SELECT DISTINCT subscription_id AS "subscriptionId", stream FROM event_deliveries
      WHERE event_id = ANY ($1::bigint[]) AND state = 'pending'`,
    [eventIds],
  );
  return rows;
}

export async function markDispatched(db: Queryable, eventIds: readonly string[]): Promise<void> {
  await db.query(
    `UPDATE event_outbox SET dispatched_at = now() WHERE id = ANY ($1::bigint[]) AND dispatched_at IS NULL`,
    [eventIds],
  );
}

/**
 * Retention: deletes up to `limit` events that occurred more than `olderThanDays` ago, were dispatched, and have
 * no pending delivery, with their delivery rows, in one statement (the foreign key is checked at its end). Pending
 * deliveries keep their events however old. Returns how many events went.
 */
export async function pruneFinalEvents(db: Queryable, olderThanDays: number, limit: number): Promise<number> {
  const { rows } = await db.query<{ pruned: number }>(
    `WITH old AS (
       SELECT o.id FROM event_outbox o
        WHERE o.occurred_at < now() - make_interval(days => $1::int) AND o.dispatched_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM event_deliveries d WHERE d.event_id = o.id AND d.state = 'pending')
        ORDER BY o.occurred_at LIMIT $2::int
     ), deliveries AS (
       DELETE FROM event_deliveries d USING old WHERE d.event_id = old.id RETURNING 1
     ), events AS (
       DELETE FROM event_outbox o USING old WHERE o.id = old.id RETURNING 1
     )
     SELECT (SELECT count(*) FROM events)::int AS pruned`,
    [olderThanDays, limit],
  );
  return rows[0]?.pruned ?? 0;
}

/**
 * The same outbox write as `emitEvent`, as two CTEs of the change's own statement (one statement: one
 * atomic effect): one event per row of `source` that passes `where`. `type`, `externalRef` and
 * `payload` are SQL expressions over the source's columns, written in code (never from input). For
 * statements that change at most one row of a stream (two rows of one stream would take one seq).
 */
export function eventsFrom(
  source: string,
  spec: { type: string; externalRef: string; payload: string; where: string },
): string {
  return `ev_seq AS (
    INSERT INTO event_streams (stream, last_seq)
    SELECT ${spec.externalRef}, 1 FROM ${source} WHERE ${spec.where}
    ON CONFLICT (stream) DO UPDATE SET last_seq = event_streams.last_seq + 1
    RETURNING stream, last_seq
  ), ev AS (
    INSERT INTO event_outbox (type, stream, seq, external_ref, payload)
    SELECT ${spec.type}, q.stream, q.last_seq, ${spec.externalRef}, ${spec.payload}
      FROM ${source} JOIN ev_seq q ON q.stream = ${spec.externalRef} WHERE ${spec.where}
    RETURNING id
  )`;
}
