import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { eventStreamWorkflowId } from '../../src/domain/ids.js';
import type { DeliverEventStreamInput } from '../../src/domain/event-streams.js';
import { eventsPendingSignal, eventStreamStatusQuery } from '../../workflows/deliver-event-stream.js';
import { fastWorld, uniqueId, untilValue, type ActivityMocks, type FastWorld } from '../harness/fast-workflow.js';

/**
 * deliverEventStream with mocked activities: the stream's pending deliveries sent one at a time in the order
 * nextStreamDelivery gives them; a failed attempt retried until it lands; a non-retryable refusal and a delivery
 * still failing when `retryFor` runs out marked failed (and the stream goes on); nothing pending: idle until
 * `idleFor` ends the run, or until eventsPending wakes it for what came since.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

/** A stream whose pending deliveries are `pending` (oldest first); `send` answers each attempt. */
function streamMocks(pending: string[], send: (deliveryId: string, attempt: number) => void) {
  const calls = { next: [] as unknown[], sent: [] as string[], failed: [] as string[] };
  const attempts = new Map<string, number>();
  const activities: ActivityMocks = {
    nextStreamDelivery: async (input) => {
      calls.next.push(input);
      const deliveryId = pending.shift();
      return deliveryId ? { deliveryId } : null;
    },
    sendEventDelivery: async (input) => {
      calls.sent.push(input.deliveryId);
      const attempt = (attempts.get(input.deliveryId) ?? 0) + 1;
      attempts.set(input.deliveryId, attempt);
      send(input.deliveryId, attempt);
      return { status: 204 };
    },
    failEventDelivery: async (input) => {
      calls.failed.push(input.deliveryId);
    },
  };
  return { calls, activities };
}

const failedAttempt = () => ApplicationFailure.create({ type: 'EVENT_DELIVERY_FAILED', message: 'receiver said 503' });

describe('deliverEventStream (mocked activities)', () => {
  it('sends oldest first, retries a failed attempt, marks refused and timed-out deliveries failed, then ends idle', async () => {
    const subscriptionId = uniqueId('sub');
    const stream = uniqueId('t');
    const { calls, activities } = streamMocks(['d1', 'd2', 'd3', 'd4', 'd5'], (deliveryId, attempt) => {
      if (deliveryId === 'd2' && attempt === 1) throw failedAttempt();
      if (deliveryId === 'd3') throw ApplicationFailure.nonRetryable('gone', 'EVENT_DELIVERY_FAILED');
      if (deliveryId === 'd4') throw failedAttempt();
    });
    await world.run(activities, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('deliverEventStream', {
        taskQueue,
        workflowId: eventStreamWorkflowId(subscriptionId, stream),
        args: [
          {
            subscriptionId,
            stream,
            policy: { retryFor: '1500ms', initialInterval: '50ms', maximumInterval: '100ms', idleFor: '100ms' },
          } satisfies DeliverEventStreamInput,
        ],
      });
      expect(result).toEqual({ delivered: 3, failed: 2 });
    });
    // d4 kept failing until retryFor ran out; every other delivery in order, d5 only after d4 was given up.
    expect(calls.sent.filter((d) => d !== 'd4')).toEqual(['d1', 'd2', 'd2', 'd3', 'd5']);
    expect(calls.sent).toContain('d4');
    expect(calls.sent.indexOf('d5')).toBeGreaterThan(calls.sent.lastIndexOf('d4'));
    expect(calls.failed).toEqual(['d3', 'd4']);
    // One read per delivery, and one that found nothing before the idle end.
    expect(calls.next).toEqual(Array.from({ length: 6 }, () => ({ subscriptionId, stream })));
  }, 30_000);

  it('idle with nothing pending, woken by eventsPending (signal-with-start) for what came since', async () => {
    const subscriptionId = uniqueId('sub');
    const pending: string[] = [];
    const { calls, activities } = streamMocks(pending, () => undefined);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.signalWithStart('deliverEventStream', {
        taskQueue,
        workflowId: eventStreamWorkflowId(subscriptionId, ''),
        args: [{ subscriptionId, stream: '', policy: { idleFor: '1m' } } satisfies DeliverEventStreamInput],
        signal: eventsPendingSignal,
      });
      const idle = await untilValue(
        () => handle.query(eventStreamStatusQuery).catch(() => null),
        (s) => s?.stage === 'idle',
      );
      expect(idle).toEqual({ stage: 'idle', waitingFor: 'a new event for this stream, up to 1m' });
      expect(calls.sent).toEqual([]);
      pending.push('e1', 'e2');
      await handle.signal(eventsPendingSignal);
      await untilValue(
        async () => calls.sent.length,
        (n) => n === 2,
      );
      const again = await untilValue(
        () => handle.query(eventStreamStatusQuery),
        (s) => s.stage === 'idle',
      );
      expect(again.stage).toBe('idle');
      expect(calls.sent).toEqual(['e1', 'e2']);
      expect(calls.next).toContainEqual({ subscriptionId, stream: '' });
      await handle.terminate('test done');
    });
  }, 30_000);
});
