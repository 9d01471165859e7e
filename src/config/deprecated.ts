import { DEFAULTS } from './defaults.js';
import { area, setting, wholeNumber } from './helpers.js';

/**
 * Settings 1.0 documented that nobody had reason to turn (issue 46's audit). As the CHANGELOG's policy asks, they
 * still work in 1.x, but they are out of the configuration reference, and one that is set is named in a warning
 * at start (deprecatedSettingWarnings); a later major or minor version drops them and keeps their defaults.
 */
export const deprecatedSettings = area('deprecated', {
  GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS: setting(
    wholeNumber(0, 7 * 86_400, DEFAULTS.GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS),
    {
      description:
        "How long a replaced or deleted webhook's secret is still accepted (platform retries of its deliveries), " +
        'in seconds.',
      advanced: true,
    },
  ),
  GATEWAY_WEBHOOK_TOLERANCE_SECONDS: setting(wholeNumber(30, 86_400, DEFAULTS.GATEWAY_WEBHOOK_TOLERANCE_SECONDS), {
    description:
      "How far a delivery's body `timestamp` may be from the gateway's clock, either way, before it is refused " +
      'as a replay, in seconds (Standard Webhooks: 5 minutes).',
    advanced: true,
  }),
  GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS: setting(wholeNumber(1, 3_650, DEFAULTS.GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS), {
    description:
      'Processed webhook inbox rows older than this many days are pruned (batched, every 10 minutes); ' +
      'unprocessed rows are kept.',
    advanced: true,
  }),
  EVENTS_SECRET_OVERLAP_SECONDS: setting(wholeNumber(0, 2_592_000, DEFAULTS.EVENTS_SECRET_OVERLAP_SECONDS), {
    description: 'After `events rotate-secret`, the old secret keeps signing (both signatures sent) this many seconds.',
    advanced: true,
  }),
});

/** One warning per deprecated setting that is set (names only, never values). */
export function deprecatedSettingWarnings(env: Record<string, string | undefined>): string[] {
  return Object.keys(deprecatedSettings.settings)
    .filter((name) => env[name] !== undefined && env[name]!.trim() !== '')
    .map((name) => `${name} is deprecated (1.1): it still applies, but a later version drops it and keeps its default`);
}
