import { DEFAULT_TRANSFER_MAX_MICRO_USD, TRANSFER_MAX_SETTING } from '../domain/transfer-limit.js';
import { DEFAULTS } from './defaults.js';
import { area, microUsd, setting } from './helpers.js';

export const fundingSettings = area('funding', {
  RESUME_BALANCE_FLOOR_MICRO_USD: setting(
    microUsd({ positive: false, example: '1000000' }, DEFAULTS.RESUME_BALANCE_FLOOR_MICRO_USD),
    {
      description:
        '`resume` refuses a tenant whose wallet balance is below this (micro-USD): the gateway before any run starts ' +
        "(`409 BALANCE_BELOW_FLOOR`, read with the parent key), the worker again in the run; a tenant's plan may set " +
        'its own; `0` checks nothing.',
    },
  ),
  [TRANSFER_MAX_SETTING]: setting(
    microUsd({ positive: true, example: '10000000000' }, DEFAULT_TRANSFER_MAX_MICRO_USD),
    {
      description:
        'The largest single transfer (top-up, auto top-up, initial funding) in micro-USD (the default is 10,000 ' +
        'USD): more is `400 INVALID_INPUT` naming the field and this setting, at `/v1`, in `tenantctl` and in the ' +
        "worker's input check; a funding policy whose `to` exceeds it is refused.",
    },
  ),
} as const);
