import { PACED_SHARE } from '../../src/db/request-pacer.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import type { PlatformClient } from '../../src/platform/index.js';

/**
 * What rotation activities need beyond ActivityDeps, read from configuration by the entry point
 * (src/config/rotation.ts holds the settings; src/config is the only reader of process.env) and passed in as
 * `ActivityDeps.rotation`.
 */
export interface RotationOptions {
  /** Used when a rotation does not name its deployer. */
  defaultDeployer: 'notify' | 'project-env';
  /** The parent's endpoint for signed `keyRotated` notices; unset: the notify deployer refuses (non-retryable). */
  notify?: { url: string; secret: string; timeoutMs: number };
  /** Env var written by the project-env deployer when the rotation names none. */
  envVariable: string;
  /** A platform client with the env-var paths overridden, when configured; default: deps.platform. */
  envVarsPlatform?: PlatformClient;
}

export const DEFAULT_ROTATION_OPTIONS: RotationOptions = {
  defaultDeployer: DEFAULTS.ROTATION_DEPLOYER,
  envVariable: DEFAULTS.ROTATION_ENV_VAR,
};

/**
 * Each rotation activity makes at most this many platform requests in the normal case (the
 * project-env deployer: read + replace); the drift lister's fallback pacing (no shared budget) uses it.
 */
export const MAX_REQUESTS_PER_ROTATION_ACTIVITY = 2;

/**
 * The platform task queue's activity rate: the paced budget, one request an activity. It is only the
 * ceiling on how many platform activities start; the requests themselves are paced where they are sent,
 * by the budget every worker and gateway shares (src/db/request-pacer.ts). Before: the budget halved
 * (two requests an activity), which held the one-request work (a sweep's wallet reads and top-ups, a
 * rotation's create, verify and gate look) at half the budget: at the default 20/s a fleet rotation
 * ran at 10/s, 1.98 x its floor (issue 34).
 */
export function platformActivitiesPerSecond(requestsPerSecond: number): number {
  return Math.max(0.1, requestsPerSecond * PACED_SHARE);
}

/**
 * Platform activities one worker runs at once: about two seconds of the budget (5 to 100: at least a few, so
 * one long activity, a drift check's paced listing, does not hold the others up). Activities that
 * make two requests wait for their second turn; with the queue at the whole budget, the requests waiting at
 * once are bounded by these slots, so a wait for the budget stays a few seconds per worker, far inside an
 * activity's timeout (with 100 slots at 20/s it reached 11 s and four activities timed out while waiting).
 */
export function platformActivitySlots(requestsPerSecond: number): number {
  return Math.min(100, Math.max(5, Math.ceil(requestsPerSecond * PACED_SHARE * 2)));
}
