import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from '../db/pool.js';
import { takePlatformRequestSlot } from '../db/request-pacing-store.js';

/**
 * The share of PLATFORM_RATE_LIMIT_PER_SECOND the requests are paced to: the platform's own window and ours
 * are not aligned, and its clock is not ours, so a little room is kept.
 */
export const PACED_SHARE = 0.9;
/** How far ahead a request may take its instant; past it, it looks again after POLL_MS without taking one. */
const MAX_WAIT_MS = 2_000;
const POLL_MS = 250;

/**
 * Paces every platform request of this process against one budget shared through Postgres by every worker and
 * gateway: each request is spaced `1 / (rate × PACED_SHARE)` seconds after the one before it, whichever process
 * sent that one, so no second sees more than the platform's rate limit. A request waits at most a few seconds
 * per look; a busy budget makes it look again rather than queue far ahead.
 */
export function createRequestPacer(pool: Pool, requestsPerSecond: number): () => Promise<void> {
  const intervalMs = 1000 / (requestsPerSecond * PACED_SHARE);
  return async function pace(): Promise<void> {
    for (;;) {
      const waitMs = await takePlatformRequestSlot(pool, intervalMs, MAX_WAIT_MS);
      if (waitMs === null) {
        await sleep(POLL_MS);
        continue;
      }
      if (waitMs > 0) await sleep(waitMs);
      return;
    }
  };
}
