/**
 * Top-up names, importable by workflows (no zod, no I/O). The caller's idempotency key has no `:`, so
 * the workflow id `fund:<externalRef>:<key>` (src/domain/ids.ts) splits one way only.
 */
export const IDEMPOTENCY_KEY_RULE = '1-255 characters of A-Z a-z 0-9 . _ - (no colon)';
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._-]{1,255}$/;

/** The transfer intent's purpose: one logical transfer per tenant and caller key. */
export function topUpPurpose(idempotencyKey: string): string {
  return `top-up:${idempotencyKey}`;
}

export const TransferKind = { initial: 'initial', topUp: 'top-up', auto: 'auto' } as const;
export type TransferKind = (typeof TransferKind)[keyof typeof TransferKind];
