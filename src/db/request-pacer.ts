import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import type { Queryable } from './pool.js';
import { takePlatformRequestSlot } from './request-pacing-store.js';

/**
 * The share of PLATFORM_RATE_LIMIT_PER_SECOND the requests are paced to: the platform's own window and ours
 * are not aligned, and its clock is not ours, so a little room is kept.
 */
export const PACED_SHARE = 0.9;
/**
 * How far ahead a request may take its instant; past it, it looks again after POLL_MS without taking one. The
 * platform workers' slots (platformActivitySlots: two seconds of the budget, up to two requests each) keep a
 * worker's waiting requests within it, so they take their instants in turn rather than by luck of the poll.
 */
const MAX_WAIT_MS = 5_000;
const POLL_MS = 250;
/**
 * A request that wakes this much after its instant (the process was held up: a busy CPU, a long pause) takes
 * another instead of sending late: requests held up together would otherwise go out together, and a second
 * would see the ones of the stall on top of its own (measured: 106/s against 100 at 90 %, 13 × 429, when a
 * fleet's worker shared two busy cores). At 90 % of the rate, 50 ms of bunching stays within the limit.
 */
export const LATE_MS = 50;
/** Instants a request may let pass that way before it goes anyway (a process held up all the time still sends). */
const MAX_RETAKES = 3;

export interface PacerClock {
  now(): number;
  sleep(ms: number): Promise<unknown>;
}
const realClock: PacerClock = { now: () => performance.now(), sleep: (ms) => sleep(ms) };

/**
 * Paces every platform request of this process against one budget shared through Postgres by every worker and
 * gateway: each request is spaced `1 / (rate × PACED_SHARE)` seconds after the one before it, whichever process
 * sent that one, so no second sees more than the platform's rate limit. A request waits at most a few seconds
 * per look; a busy budget makes it look again rather than queue far ahead; one that wakes late takes a new instant.
 */
export function createRequestPacer(
  pool: Queryable,
  requestsPerSecond: number,
  clock: PacerClock = realClock,
): () => Promise<void> {
  const intervalMs = 1000 / (requestsPerSecond * PACED_SHARE);
  return async function pace(): Promise<void> {
    let retakes = 0;
    for (;;) {
      const askedAt = clock.now();
      const waitMs = await takePlatformRequestSlot(pool, intervalMs, MAX_WAIT_MS);
      if (waitMs === null) {
        await clock.sleep(POLL_MS);
        continue;
      }
      if (waitMs > 0) await clock.sleep(waitMs);
      // The instant was at most askedAt + waitMs (the database read its clock after askedAt).
      if (clock.now() - (askedAt + waitMs) > LATE_MS && retakes < MAX_RETAKES) {
        retakes += 1;
        continue;
      }
      return;
    }
  };
}
