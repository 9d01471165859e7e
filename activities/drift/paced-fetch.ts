import { createPlatformClient, type PlatformClient, type PlatformKeyProvider } from '../../src/platform/index.js';
import { MAX_REQUESTS_PER_ROTATION_ACTIVITY } from '../keys/rotation-options.js';

/**
 * The parent's sub-account list is fetched page by page inside ONE activity, so the platform task
 * queue's activity rate limit cannot pace its pages. This fetch spaces its own requests instead, at
 * a quarter of the platform budget: with the queue's activities (at most budget/2 requests per
 * second, see platformActivitiesPerSecond) the platform never sees more than 3/4 of the budget.
 */
function pacedFetch(requestsPerSecond: number, base: typeof fetch = globalThis.fetch): typeof fetch {
  const spacingMs = 1000 / Math.max(0.1, requestsPerSecond);
  let nextAt = 0;
  return async (input, init) => {
    const now = Date.now();
    const at = Math.max(now, nextAt);
    nextAt = at + spacingMs;
    if (at > now) await new Promise((resolve) => setTimeout(resolve, at - now));
    return base(input, init);
  };
}

/** The sub-account lister of drift checks: large pages asked for, paced (see above). */
export function createDriftListClient(options: {
  baseUrl: string;
  platformKey: PlatformKeyProvider | string;
  timeoutMs: number;
  requestsPerSecond: number;
  /**
   * The budget every worker and gateway shares (src/db/request-pacer.ts): the pages take their turns in it
   * like every other request. Absent: this process spaces its own pages at a quarter of the budget.
   */
  pace?: () => Promise<void>;
}): PlatformClient {
  return createPlatformClient({
    baseUrl: options.baseUrl,
    platformKey: options.platformKey,
    timeoutMs: options.timeoutMs,
    pageSize: 100,
    // No cap of our own: a platform may ignore the page size (two per page), see DEFAULT_MAX_PAGES.
    ...(options.pace
      ? { pace: options.pace }
      : { fetch: pacedFetch(options.requestsPerSecond / MAX_REQUESTS_PER_ROTATION_ACTIVITY / 2) }),
  });
}
