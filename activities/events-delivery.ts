import type { OutboxRow } from '../src/db/events-store.js';
import { eventIdOf } from '../src/db/events-store.js';
import type { Pool } from '../src/db/pool.js';

/**
 * The body of every delivery of an event (and of its replays): built from the outbox row alone, so
 * it is the same bytes each time. Standard Webhooks' suggested shape: type, timestamp, data.
 */
export function deliveryBody(event: OutboxRow): string {
  return JSON.stringify({
    id: eventIdOf(event.id),
    type: event.type,
    timestamp: event.occurredAt.toISOString(),
    tenant: event.externalRef,
    sequence: event.seq,
    data: event.payload,
  });
}

/** Retry-After as seconds or an HTTP date, capped at an hour; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  const ms = /^[0-9]{1,7}$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), 3_600_000);
}

/**
 * LISTEN event_outbox on a client of its own for the span of `fn`: `wait(ms)` resolves at once when
 * an insert committed since the last wait (none is missed between a read and the wait), else on the
 * next one or after ms.
 */
export async function withOutboxListener<T>(
  pool: Pool,
  fn: (wait: (ms: number) => Promise<void>) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  let notified = false;
  let wake: (() => void) | undefined;
  const onError = () => (broken = true);
  const onNotification = () => {
    notified = true;
    wake?.();
  };
  client.on('error', onError);
  client.on('notification', onNotification);
  try {
    await client.query('LISTEN event_outbox');
    return await fn(async (ms) => {
      if (!notified)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      wake = undefined;
      notified = false;
    });
  } finally {
    if (!broken) await client.query('UNLISTEN event_outbox').catch(() => (broken = true));
    client.off('notification', onNotification);
    client.off('error', onError);
    client.release(broken);
  }
}
