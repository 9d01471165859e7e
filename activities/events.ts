import { ApplicationFailure, Context, heartbeat } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import {
  eventIdOf,
  fanOutEvents,
  findEvent,
  listPendingStreams,
  markDispatched,
  pruneFinalEvents,
} from '../src/db/events-store.js';
import {
  findDelivery,
  findNextPendingDelivery,
  recordAttempt,
  settleDelivery,
} from '../src/db/event-deliveries-store.js';
import { findSubscription, listSigningSecrets } from '../src/db/event-subscriptions-store.js';
import { eventStreamWorkflowId } from '../src/domain/ids.js';
import { EVENTS_PENDING_SIGNAL, type DeliverEventStreamInput, type StreamPolicy } from '../src/domain/events.js';
import { signedHeaders, subscriptionSecretAad } from '../src/secrets/standard-webhooks.js';
import { answeredError, DELIVERY_NOT_DELIVERED } from '../src/domain/delivery-errors.js';
import { outboundFailureDetail } from '../src/infra/outbound/fetch.js';
import { defaultOutbound } from './outbound.js';
import type { ActivityDeps } from './context.js';
import { boundary } from './failures.js';
import { deliveryBody, retryAfterMs, withOutboxListener } from './events-delivery.js';
import { DEFAULTS } from '../src/config/defaults.js';

const DEFAULT_RETENTION_DAYS = DEFAULTS.EVENTS_RETENTION_DAYS;
/** Events pruned per idle dispatcher round at most (one short statement). */
const PRUNE_BATCH = 1_000;

/** What the dispatcher and the delivery workflows do; the HTTP call is the only effect outside Postgres. */
export function createEventActivities(deps: ActivityDeps) {
  const { pool, vault, logger } = deps;
  const outbound = deps.outbound ?? defaultOutbound();
  const timeoutMs = deps.events?.requestTimeoutMs ?? 10_000;
  const retentionDays = deps.events?.retentionDays ?? DEFAULT_RETENTION_DAYS;

  async function kick(streams: Array<{ subscriptionId: string; stream: string }>, policy: StreamPolicy | undefined) {
    const { client, info } = Context.current();
    const queue = [...streams];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const input: DeliverEventStreamInput = { ...next, ...(policy ? { policy } : {}) };
        try {
          await client.workflow.signalWithStart('deliverEventStream', {
            taskQueue: info.taskQueue,
            workflowId: eventStreamWorkflowId(next.subscriptionId, next.stream),
            args: [input],
            signal: EVENTS_PENDING_SIGNAL,
            signalArgs: [],
          });
        } catch (error) {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, queue.length) }, worker));
  }

  return {
    /**
     * One dispatcher round: waits (LISTEN) up to `waitMs` for committed events, fans a batch out
     * into delivery rows, wakes each (subscription, tenant) stream workflow, then marks the batch
     * dispatched. Every step is idempotent, so a crash anywhere repeats work but loses none.
     */
    dispatchOutbox: boundary(
      async (input: { limit?: number; waitMs?: number; policy?: StreamPolicy }): Promise<{ events: number }> => {
        const limit = input.limit ?? 500;
        const deadline = Date.now() + (input.waitMs ?? 5_000);
        return withOutboxListener(pool, async (wait) => {
          for (;;) {
            heartbeat();
            const eventIds = await fanOutEvents(pool, limit);
            if (eventIds.length > 0) {
              await kick(await listPendingStreams(pool, eventIds), input.policy);
              await markDispatched(pool, eventIds);
              return { events: eventIds.length };
            }
            const left = deadline - Date.now();
            if (left <= 0) {
              // An idle round prunes what retention lets go: a batch each time, so a backlog drains over rounds.
              await pruneFinalEvents(pool, retentionDays, PRUNE_BATCH);
              return { events: 0 };
            }
            await wait(Math.min(left, 1_000));
          }
        });
      },
    ),

    /** The oldest pending delivery of a stream (a later event of a tenant never goes before an earlier one). */
    nextStreamDelivery: boundary(
      async (input: { subscriptionId: string; stream: string }): Promise<{ deliveryId: string } | null> => {
        const next = await findNextPendingDelivery(pool, input.subscriptionId, input.stream);
        return next ? { deliveryId: next.id } : null;
      },
    ),

    /**
     * One attempt of one delivery, signed with every live secret of the subscription. 2xx settles
     * it delivered; anything else is recorded and thrown for Temporal's retry (Retry-After honoured).
     * The POST goes through the outbound guard (no inward address, no redirect); a request that got no
     * HTTP answer is recorded as one generic error whatever the cause (detail: debug log only).
     */
    sendEventDelivery: boundary(async (input: { deliveryId: string }): Promise<{ status: number } | null> => {
      const delivery = await findDelivery(pool, input.deliveryId);
      if (!delivery || delivery.state !== 'pending') return null;
      const [event, subscription, secrets] = await Promise.all([
        findEvent(pool, delivery.eventId),
        findSubscription(pool, delivery.subscriptionId),
        listSigningSecrets(pool, delivery.subscriptionId),
      ]);
      if (!event || !subscription || subscription.status !== 'active' || secrets.length === 0) {
        await settleDelivery(pool, delivery.id, 'failed');
        return null;
      }
      const body = deliveryBody(event);
      const opened = secrets.map((s) =>
        vault.open(s.sealed, subscriptionSecretAad({ subscriptionId: s.subscriptionId, generation: s.generation })),
      );
      const headers = signedHeaders(opened, eventIdOf(event.id), Math.floor(Date.now() / 1000), body);
      let status: number | null = null;
      let retryAfter: number | undefined;
      let problem: string;
      try {
        const response = await outbound(subscription.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'tenant-orchestrator-events', ...headers },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
        status = response.status;
        await response.body?.cancel().catch(() => undefined);
        if (status >= 200 && status < 300) {
          await recordAttempt(pool, delivery.id, { status, error: null });
          await settleDelivery(pool, delivery.id, 'delivered');
          return { status };
        }
        retryAfter = retryAfterMs(response.headers.get('retry-after'));
        problem = answeredError(status);
      } catch (error) {
        problem = DELIVERY_NOT_DELIVERED;
        logger.debug(
          { deliveryId: delivery.id, subscriptionId: subscription.id, detail: outboundFailureDetail(error) },
          'event delivery attempt got no answer',
        );
      }
      await recordAttempt(pool, delivery.id, { status, error: problem });
      logger.debug(
        { deliveryId: delivery.id, subscriptionId: subscription.id, status },
        'event delivery attempt failed',
      );
      throw ApplicationFailure.create({
        type: 'EVENT_DELIVERY_FAILED',
        message: `delivery ${delivery.id} to subscription ${subscription.id}: ${problem}`,
        ...(retryAfter !== undefined ? { nextRetryDelay: retryAfter } : {}),
      });
    }),

    /** The retries ran out: failed, visible in `tenantctl events deliveries --failed`, replayable. */
    failEventDelivery: boundary(async (input: { deliveryId: string }): Promise<void> => {
      await settleDelivery(pool, input.deliveryId, 'failed');
    }),
  };
}
