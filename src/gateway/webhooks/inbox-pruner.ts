import type { Pool } from '../../client/records.js';
import { pruneInbox } from '../../client/webhooks/webhook-inbox.js';
import type { Logger } from '../../infra/log.js';

/**
 * Inbox retention. The inbox is the receiver's dedupe memory, so a row may go only once the platform
 * can no longer redeliver it: processed rows older than the retention (30 days by default, far past
 * the 5-minute timestamp tolerance, so a pruned delivery replayed later is refused as stale anyway).
 * Rows never processed are kept. Deletes go in small batches (short locks, small WAL bursts), a bounded
 * number per round so a large backlog drains over several rounds instead of one long one.
 *
 * It runs in the gateway, beside the delivery sweeper, because the inbox is the gateway's table and
 * the gateway is always running where deliveries arrive; several gateways prune safely together
 * (SKIP LOCKED). A Temporal schedule would be a second moving part for one DELETE.
 */
export interface InboxPrunerOptions {
  pool: Pool;
  retentionSeconds: number;
  logger?: Logger;
  batch?: number;
  maxBatchesPerRound?: number;
  intervalMs?: number;
}

export interface InboxPruner {
  /** One round: batches until one comes back short or the round's limit is reached; returns rows deleted. */
  pruneOnce(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

export function createInboxPruner(options: InboxPrunerOptions): InboxPruner {
  const batch = options.batch ?? 1_000;
  const maxBatches = options.maxBatchesPerRound ?? 20;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;

  async function round(): Promise<number> {
    let total = 0;
    for (let i = 0; i < maxBatches; i += 1) {
      const deleted = await pruneInbox(options.pool, {
        olderThanSeconds: options.retentionSeconds,
        batch,
      });
      total += deleted;
      if (deleted < batch) break;
    }
    if (total > 0) options.logger?.info({ deleted: total }, 'pruned processed webhook deliveries past their retention');
    return total;
  }

  const pruner: InboxPruner = {
    pruneOnce() {
      running ??= round().finally(() => (running = undefined));
      return running;
    },
    start() {
      if (timer) return;
      timer = setInterval(() => {
        pruner
          .pruneOnce()
          .catch((error: unknown) =>
            options.logger?.warn({ err: error }, 'webhook inbox pruning failed; trying again at the next interval'),
          );
      }, options.intervalMs ?? 600_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
  return pruner;
}
