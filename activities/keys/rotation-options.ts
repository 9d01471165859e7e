import { PACED_SHARE } from '../../src/infra/request-pacer.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import type { PlatformClient } from '../../src/platform/index.js';

/**
 * What rotation activities need beyond ActivityDeps, read from configuration by the entry point
 * (src/config/rotation.ts holds the settings; src/config is the only reader of process.env) and passed in as `ActivityDeps.rotation`.
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
 * project-env deployer: read + replace). The task queue's activity rate is the request budget
 * divided by it: a ceiling on how many platform activities start, so few wait for the budget.
 * The requests themselves are paced where they are sent, by the budget every worker and gateway
 * shares (src/infra/request-pacer.ts), which a burst of the queue's token bucket cannot exceed;
 * before it, the queue's rate was halved again for that burst and the fleet ran at a quarter of
 * the budget (issue 34).
 */
export const MAX_REQUESTS_PER_ROTATION_ACTIVITY = 2;

export function platformActivitiesPerSecond(requestsPerSecond: number): number {
  // Started no faster than the paced budget can serve them, so no backlog builds in the budget while a fleet runs.
  return Math.max(0.1, (requestsPerSecond * PACED_SHARE) / MAX_REQUESTS_PER_ROTATION_ACTIVITY);
}
