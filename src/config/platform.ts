import { z } from 'zod';
import { isHttpsOrLoopback } from '../domain/outbound-rule.js';
import { DEFAULTS } from './defaults.js';
import { area, emptyToUndefined, positiveNumber, setting, wholeNumber } from './helpers.js';

export const platformSettings = area('platform', {
  PLATFORM_BASE_URL: setting(
    z.preprocess(
      emptyToUndefined,
      z
        .url({ protocol: /^https?$/, error: 'must be an http(s) URL ending in /api/v1' })
        .refine(
          isHttpsOrLoopback,
          'must be https (plain http only to a loopback host: the parent key goes with every call)',
        )
        .optional(),
    ),
    {
      description:
        'The platform API base including the version prefix (ending in `/api/v1`); https (plain http only to ' +
        'loopback: the parent key goes with every call).',
      unset: 'none (the worker refuses to start)',
      devStack: 'the simulator',
    },
  ),
  PLATFORM_API_KEY: setting(
    z.preprocess(
      emptyToUndefined,
      z.string().startsWith('svpk_', 'must be a platform key (starts with svpk_)').optional(),
    ),
    {
      description:
        "Bootstrap only: the parent's platform key (`svpk_…`), sealed into our records on first start; after that " +
        'every process reads the current key from the records (`tenantctl parent-key`).',
      secret: true,
      unset: 'the key in our records',
      devStack: "the simulator's fixture key",
    },
  ),
  PLATFORM_PERSONAL_TOKEN: setting(
    z.preprocess(
      emptyToUndefined,
      z.string().startsWith('sv_', 'must be a personal access token (starts with sv_)').optional(),
    ),
    {
      description:
        'Personal access token (`sv_…`) for registry webhook management (the contract requires one); the ' +
        'gateway holds it.',
      secret: true,
      unset: 'none (`/v1/webhooks` answers 503 where it would call the platform)',
      devStack: "the simulator's",
    },
  ),
  PLATFORM_TIMEOUT_MS: setting(wholeNumber(100, 120_000, DEFAULTS.PLATFORM_TIMEOUT_MS), {
    description: 'Per-request deadline of platform calls, in ms.',
    advanced: true,
  }),
  PLATFORM_RATE_LIMIT_PER_SECOND: setting(positiveNumber(10_000, DEFAULTS.PLATFORM_RATE_LIMIT_PER_SECOND), {
    description:
      "The platform's rate limit: every platform request of every worker and gateway takes its turn in one " +
      "budget kept in Postgres, at 90% of it; the `<queue>-platform` task queue's rate (the server's) is " +
      'the ceiling on platform activity starts.',
    advanced: true,
  }),
  PLATFORM_TENANT_KEY_LIMIT: setting(wholeNumber(2, 1_000, DEFAULTS.PLATFORM_TENANT_KEY_LIMIT), {
    description:
      "The platform's cap on a tenant's active keys; set it to your platform's (the contract does not show it). " +
      "A plan may have at most one slot fewer, `default` included, so that a rotation's new key fits beside the " +
      'old one: a plan over it is refused when written, rolled out, assigned or onboarded.',
  }),
});
