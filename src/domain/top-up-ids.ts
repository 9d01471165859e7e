/**
 * Top-up ids, importable by workflows (no zod, no I/O). The caller's idempotency key has no `:`, so
 * `fund:<externalRef>:<key>` splits one way only, whatever `:` the external ref holds.
 */
export const IDEMPOTENCY_KEY_RULE = '1-255 characters of A-Z a-z 0-9 . _ - (no colon)';
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._-]{1,255}$/;

/** Workflow id of a top-up: one run per tenant and caller key, whichever way it was started. */
export function topUpWorkflowId(externalRef: string, idempotencyKey: string): string {
  return `fund:${externalRef}:${idempotencyKey}`;
}

/** The transfer intent's purpose: one logical transfer per tenant and caller key. */
export function topUpPurpose(idempotencyKey: string): string {
  return `top-up:${idempotencyKey}`;
}

/** The auto top-up sweep's workflow id (its Schedule's action) and the Schedule's id. */
export const AUTO_TOP_UP_SCHEDULE_ID = 'auto-top-up';
export function autoTopUpSweepWorkflowId(): string {
  return 'auto-top-up-sweep';
}

export const TransferKind = { initial: 'initial', topUp: 'top-up', auto: 'auto' } as const;
export type TransferKind = (typeof TransferKind)[keyof typeof TransferKind];
