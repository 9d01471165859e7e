import { ONBOARDING_PURPOSE } from '../src/domain/onboarding.js';
import { transferKey } from '../src/domain/transfer-keys.js';

/**
 * Idempotency keys derived from the business key: stable across retries, workers and restarts,
 * bounded (under 64 characters) and of a safe charset ([a-z0-9-]) whatever the external ref holds.
 */
export { subaccountCreateKey } from '../src/domain/transfer-keys.js';

/** One key per attempt generation: the generation moves only after a definite refusal (src/domain/transfer-keys). */
export { transferKey } from '../src/domain/transfer-keys.js';

/** Name prefix of the platform key for a slot generation; each create attempt appends `-a<N>`. */
export function keyNamePrefix(slot: string, generation: number): string {
  return `tpo-${slot}-g${generation}`;
}

/** Whether one of our transfer keys is the onboarding's funding of this tenant (the key is a digest of both). */
export function isInitialFundingKey(externalRef: string, idempotencyKey: string): boolean {
  const generation = Number(idempotencyKey.slice(idempotencyKey.lastIndexOf('-') + 1));
  return Number.isInteger(generation) && transferKey(externalRef, ONBOARDING_PURPOSE, generation) === idempotencyKey;
}
