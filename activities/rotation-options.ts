import { z } from 'zod';
import type { PlatformClient } from '../src/platform/index.js';

/**
 * What rotation activities need beyond ActivityDeps, read from configuration by the entry point
 * (config.ts stays the only reader of process.env) and passed in as `ActivityDeps.rotation`.
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

export const DEFAULT_ROTATION_OPTIONS: RotationOptions = { defaultDeployer: 'notify', envVariable: 'TENANT_API_KEY' };

const emptyToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const apiPath = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .regex(/^\/[A-Za-z0-9/:._-]*:projectId[A-Za-z0-9/:._-]*$/, 'must be a path containing :projectId')
    .optional(),
);

/** The fields to add to config.ts's configSchema (same style: described, validated together). */
export const rotationConfigShape = {
  ROTATION_DEPLOYER: z
    .preprocess(emptyToUndefined, z.enum(['notify', 'project-env']).default('notify'))
    .describe(
      'Default deployer of a rotated key: notify (signed keyRotated POST to ' +
        'ROTATION_NOTIFY_URL) or project-env (the tenant project env var).',
    ),
  ROTATION_NOTIFY_URL: z
    .preprocess(emptyToUndefined, z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional())
    .describe('The parent endpoint that receives signed keyRotated notices (ids and fingerprint, never the token).'),
  ROTATION_NOTIFY_SECRET: z
    .preprocess(emptyToUndefined, z.string().min(16, 'must be at least 16 characters').optional())
    .describe('HMAC-SHA256 secret for the X-Tpo-Signature header of keyRotated notices.'),
  ROTATION_ENV_VAR: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, 'must be an environment variable name')
        .default('TENANT_API_KEY'),
    )
    .describe('Env var the project-env deployer writes the tenant key into, when the rotation names none.'),
  ROTATION_ENV_VARS_GET_PATH: apiPath.describe(
    'Platform path to read a project env vars (default /projects/:projectId/env-vars).',
  ),
  ROTATION_ENV_VARS_PUT_PATH: apiPath.describe(
    'Platform path to replace a project env vars (default /projects/:projectId/env-vars/update).',
  ),
  PLATFORM_RATE_LIMIT_PER_SECOND: z
    .preprocess(emptyToUndefined, z.coerce.number().positive().max(10_000).default(20))
    .describe(
      'Platform requests per second allowed to rotation activities (all workers ' +
        'together, via the task queue rate limit).',
    ),
};
export const rotationConfigSchema = z.object(rotationConfigShape);
export type RotationConfig = z.infer<typeof rotationConfigSchema>;

/**
 * Each rotation activity makes at most this many platform requests in the normal case (the
 * project-env deployer: read + replace). The task queue's activity rate is the request budget
 * divided by it, halved again because Temporal's limiter is a token bucket that may let one
 * second's worth through in a burst on top of the steady rate.
 */
export const MAX_REQUESTS_PER_ROTATION_ACTIVITY = 2;

export function platformActivitiesPerSecond(requestsPerSecond: number): number {
  return Math.max(0.1, requestsPerSecond / MAX_REQUESTS_PER_ROTATION_ACTIVITY / 2);
}
