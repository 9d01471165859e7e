import { DEFAULTS } from './defaults.js';
import { area, optionalText, setting, wholeNumber } from './helpers.js';

/**
 * Knobs for developing and testing the project, not for running it: how tenantctl is launched and reports, and
 * how soon processes see a parent key changed under them (tests shorten it; in production a 401 re-reads the key
 * at once). Documented with the dev stack's settings in docs/development.md, not in the configuration reference.
 */
export const developmentSettings = area('development', {
  PARENT_KEY_REFRESH_MS: setting(wholeNumber(100, 600_000, DEFAULTS.PARENT_KEY_REFRESH_MS), {
    description:
      'How often workers and gateways re-read the current parent platform key from our records, in ms (and ' +
      'report which one they use); a 401 re-reads at once.',
    advanced: true,
  }),
  TENANTCTL_DEBUG: setting(optionalText(), {
    description: 'tenantctl: `1` prints errors with their stack trace instead of one line per problem.',
    advanced: true,
    unset: 'one line per problem',
  }),
  TENANTCTL_FROM_SOURCE: setting(optionalText(), {
    description: 'tenantctl: `1` runs the sources (tsx) even when `dist/` is fresh.',
    advanced: true,
    unset: '`dist/` when fresh, else the sources',
  }),
  TENANTCTL_FROM_DIST: setting(optionalText(), {
    description: 'tenantctl: `1` trusts a built `dist/` without checking it is fresh (the container image).',
    advanced: true,
    unset: '`dist/` when fresh, else the sources',
  }),
});

/**
 * TENANTCTL_DEBUG=1, read where an error is reported: that may be a configuration that does not load, so this one
 * setting is read on its own.
 */
export function debugRequested(env: Record<string, string | undefined> = process.env): boolean {
  return env.TENANTCTL_DEBUG === '1';
}
