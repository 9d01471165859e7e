import { createHash } from 'node:crypto';

/**
 * The platform idempotency key of a transfer, derived from the business intent (the tenant and the purpose) alone and
 * a generation that moves only after a definite refusal: a run that writes its intent again (after a restore of the
 * records) sends the key the platform already saw. Bounded (under 64 characters), of a safe charset ([a-z0-9-]).
 */
export function transferKey(externalRef: string, purpose: string, generation: number): string {
  return `${transferKeyPrefix(externalRef, purpose)}${generation}`;
}

/** Every generation's key of one intent starts with this (`tpo-xfer-<digest>-`). */
export function transferKeyPrefix(externalRef: string, purpose: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(['transfer', externalRef, purpose]))
    .digest('hex')
    .slice(0, 32);
  return `tpo-xfer-${digest}-`;
}

/** The intent part of one of our transfer keys (its generation dropped). */
export function transferKeyPrefixOf(idempotencyKey: string): string {
  return idempotencyKey.slice(0, idempotencyKey.lastIndexOf('-') + 1);
}

/** The sub-account create's idempotency key of a tenant: one per external ref, for good. */
export function subaccountCreateKey(externalRef: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(['subaccount-create', externalRef]))
    .digest('hex')
    .slice(0, 32);
  return `tpo-sub-${digest}`;
}
