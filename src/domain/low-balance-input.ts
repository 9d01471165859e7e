import { z } from 'zod';
import { microUsdSchema } from './tenant-input.js';

/**
 * A tenant's own `wallet.low_balance` threshold (`PUT /v1/tenants/:ref/low-balance`, `tenantctl
 * events low-balance --below`); clearing it (DELETE, `--default`) goes back to EVENTS_LOW_BALANCE_MICRO_USD.
 */
export const lowBalanceBodySchema = z.strictObject({ belowMicroUsd: microUsdSchema });
