import { describe, expect, it } from 'vitest';
import { emitEvent, type NewEvent } from '../../src/db/events-store.js';
import { eventually, startEventReceiver } from '../harness/event-receiver.js';
import { dispatchingSuite, subscribe } from '../harness/events-env.js';

/**
 * The outbox and its delivery rows do not grow for ever: an idle dispatcher deletes events older than
 * EVENTS_RETENTION_DAYS (default 30) whose every delivery is final, and keeps any event still being delivered.
 */
describe('event retention', () => {
  const suite = dispatchingSuite('events-retention');
  const emit = async (event: NewEvent): Promise<string> => {
    const tx = await suite.env.pool.connect();
    try {
      await tx.query('BEGIN');
      const row = await emitEvent(tx, event);
      await tx.query('COMMIT');
      return row.id;
    } finally {
      tx.release();
    }
  };
  const deliveryStates = async (eventId: string) =>
    (
      await suite.env.pool.query<{ state: string }>(
        `SELECT state FROM event_deliveries WHERE event_id = $1::bigint ORDER BY subscription_id`,
        [eventId],
      )
    ).rows.map((r) => r.state);
  const exists = async (eventId: string) =>
    (await suite.env.pool.query(`SELECT 1 FROM event_outbox WHERE id = $1::bigint`, [eventId])).rowCount === 1;
  /** `eventually` waits for a check that does not throw. */
  const until = (condition: () => Promise<boolean>, timeoutMs: number, what: string) =>
    eventually(
      async () => {
        if (!(await condition())) throw new Error('not yet');
      },
      timeoutMs,
      what,
    );
  const age = (ids: string[], days: number) =>
    suite.env.pool.query(
      `UPDATE event_outbox SET occurred_at = now() - make_interval(days => $2::int) WHERE id = ANY($1)`,
      [ids, days],
    );

  it('prunes old events whose deliveries are final, keeps pending and recent ones', async () => {
    const { env, receivers } = suite;
    const healthy = await startEventReceiver();
    const down = await startEventReceiver();
    receivers.push(healthy, down);
    await subscribe(env, healthy);
    const delivered = await emit({ type: 'tenant.suspended', externalRef: 'ret-1', data: { reason: 'old' } });
    await until(async () => (await deliveryStates(delivered)).join() === 'delivered', 30_000, 'first delivered');

    // A second subscriber that answers 500: its deliveries stay pending (retried).
    down.failWith = { status: 500 };
    await subscribe(env, down);
    const stillPending = await emit({ type: 'tenant.resumed', externalRef: 'ret-2', data: { reason: 'old' } });
    const recent = await emit({ type: 'tenant.suspended', externalRef: 'ret-3', data: { reason: 'new' } });
    await until(
      async () => (await deliveryStates(stillPending)).sort().join() === 'delivered,pending',
      30_000,
      'one delivered, one pending',
    );
    await until(async () => (await deliveryStates(recent)).includes('delivered'), 30_000, 'recent delivered');

    await age([delivered, stillPending], 31);
    // The dispatcher's next idle round (FAST_DELIVERY waits 1 s) prunes.
    await until(async () => !(await exists(delivered)), 30_000, 'the old, final event pruned');
    expect(await deliveryStates(delivered)).toEqual([]);
    expect(await exists(stillPending)).toBe(true);
    expect((await deliveryStates(stillPending)).sort()).toEqual(['delivered', 'pending']);
    expect(await exists(recent)).toBe(true);

    // Once its last delivery is final, the old event goes too.
    down.failWith = null;
    await until(async () => !(await exists(stillPending)), 60_000, 'the old event pruned once delivered');
    expect(await exists(recent)).toBe(true);
  }, 120_000);
});
