import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Pool } from '../../client/records.js';
import {
  claimInboxDeliveries,
  markInboxDeliveryStarted,
  recordInboxStartFailure,
} from '../../client/webhooks/webhook-inbox.js';
import type { Logger } from '../../infra/log.js';
import type { GatewayMetrics } from '../http/metrics.js';

/**
 * Starts `handleRegistryEvent` for inbox rows, off the request path. The receiver answers as soon as
 * the row is committed and hands the id here; a start that fails (Temporal briefly unreachable) leaves
 * the row `pending`, and the sweeper claims due pending rows and starts them again. Starts are
 * idempotent (workflow id `registry-delivery:<deliveryId>`), so a start repeated by two sweepers, or
 * after a crash between start and mark, never runs a delivery twice.
 */
export type DeliveryStarter = (delivery: { deliveryId: string; workflowId: string }) => Promise<void>;

export function temporalDeliveryStarter(client: Client, taskQueue: string): DeliveryStarter {
  return async ({ deliveryId, workflowId }) => {
    try {
      await client.workflow.start('handleRegistryEvent', {
        taskQueue,
        workflowId,
        args: [{ deliveryId }],
        // Running: join it. Closed: it already handled the delivery (REJECT_DUPLICATE then throws "already started").
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  };
}

export interface DeliveryDispatcherOptions {
  pool: Pool;
  start: DeliveryStarter;
  logger?: Logger;
  metrics?: GatewayMetrics;
  /** Starts in flight at once. */
  concurrency?: number;
  /** Beyond this many queued ids, new ones are left to the sweeper (the rows are safe in the inbox). */
  maxQueued?: number;
  /** A new row is left to the receiver's own start for this long before the sweeper may take it. */
  sweepAfterSeconds?: number;
  /** A claimed row is not claimed again for this long (its start is being retried). */
  retryAfterSeconds?: number;
  sweepIntervalMs?: number;
  sweepBatch?: number;
}

export interface DeliveryDispatcher {
  readonly sweepAfterSeconds: number;
  enqueue(delivery: { deliveryId: string; workflowId: string }): void;
  /** Claims due pending rows and queues them; returns how many. */
  sweepOnce(): Promise<number>;
  startSweeper(): void;
  /** Resolves when nothing is queued or in flight. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export function createDeliveryDispatcher(options: DeliveryDispatcherOptions): DeliveryDispatcher {
  const { pool, start, logger, metrics } = options;
  const concurrency = options.concurrency ?? 16;
  const maxQueued = options.maxQueued ?? 10_000;
  const sweepAfterSeconds = options.sweepAfterSeconds ?? 10;
  const retryAfterSeconds = options.retryAfterSeconds ?? 5;
  const queue: Array<{ deliveryId: string; workflowId: string }> = [];
  const queued = new Set<string>();
  let active = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<number> | undefined;
  let idleWaiters: Array<() => void> = [];

  const settleIdle = () => {
    if (active > 0 || queue.length > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };

  async function run(delivery: { deliveryId: string; workflowId: string }): Promise<void> {
    try {
      await start(delivery);
      await markInboxDeliveryStarted(pool, delivery.deliveryId);
      metrics?.workflowStarts.inc({ outcome: 'started' });
    } catch (error) {
      metrics?.workflowStarts.inc({ outcome: 'failed' });
      const reason = error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]}` : String(error);
      logger?.warn(
        { deliveryId: delivery.deliveryId, reason },
        'starting handleRegistryEvent failed; the sweeper retries it',
      );
      await recordInboxStartFailure(pool, delivery.deliveryId, reason.slice(0, 500)).catch(() => undefined);
    }
  }

  function pump(): void {
    while (!stopped && active < concurrency && queue.length > 0) {
      const next = queue.shift()!;
      active += 1;
      void run(next).finally(() => {
        active -= 1;
        queued.delete(next.deliveryId);
        pump();
        settleIdle();
      });
    }
  }

  async function sweep(): Promise<number> {
    const room = Math.min(options.sweepBatch ?? 200, maxQueued - queue.length);
    if (room <= 0) return 0;
    const due = await claimInboxDeliveries(pool, room, retryAfterSeconds);
    for (const delivery of due) dispatcher.enqueue(delivery);
    return due.length;
  }

  const dispatcher: DeliveryDispatcher = {
    sweepAfterSeconds,
    enqueue(delivery) {
      if (stopped || queued.has(delivery.deliveryId) || queue.length >= maxQueued) return;
      queued.add(delivery.deliveryId);
      queue.push(delivery);
      pump();
    },
    sweepOnce() {
      sweeping ??= sweep().finally(() => (sweeping = undefined));
      return sweeping;
    },
    startSweeper() {
      if (timer || stopped) return;
      timer = setInterval(() => {
        dispatcher
          .sweepOnce()
          .catch((error: unknown) =>
            logger?.warn({ err: error }, 'inbox sweep failed; trying again at the next interval'),
          );
      }, options.sweepIntervalMs ?? 2_000);
      timer.unref();
    },
    idle() {
      if (active === 0 && queue.length === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      // Queued rows stay pending in the inbox: the next gateway's sweeper starts them.
      queue.length = 0;
      queued.clear();
      stopped = true;
      await sweeping?.catch(() => undefined);
      if (active > 0) await new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
  return dispatcher;
}
