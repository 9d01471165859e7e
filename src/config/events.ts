import { DEFAULTS } from './defaults.js';
import { area, matching, microUsd, POSITIVE_DURATION_TEXT, setting, wholeNumber } from './helpers.js';

export const eventsSettings = area('events', {
  EVENTS_LOW_BALANCE_MICRO_USD: setting(microUsd({ positive: true, example: '1000000' }), {
    description:
      "`wallet.low_balance` fires when a tenant's balance is seen below this (micro-USD); tenants with a " +
      'threshold of their own (`tenantctl events low-balance`) use theirs.',
    unset: 'only tenants with their own threshold',
  }),
  EVENTS_RETRY_FOR: setting(
    matching(POSITIVE_DURATION_TEXT, 'must be a duration like 30m, 24h, 3d', DEFAULTS.EVENTS_RETRY_FOR),
    {
      description:
        'How long one event delivery is retried (backoff 1 s doubling to 10 min, `Retry-After` honoured) before ' +
        'it is marked failed.',
      advanced: true,
    },
  ),
  EVENTS_RETENTION_DAYS: setting(wholeNumber(1, 3650, DEFAULTS.EVENTS_RETENTION_DAYS), {
    description:
      'Events whose every delivery is final (delivered or failed) are deleted, with their delivery rows, this ' +
      'many days after they occurred (by the idle dispatcher, 1,000 a round); an event still being delivered is kept.',
    advanced: true,
  }),
});
