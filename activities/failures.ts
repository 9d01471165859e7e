import { ApplicationFailure } from '@temporalio/activity';
import { classifyError } from '../src/platform/index.js';
import { safeSnippet } from '../src/platform/secret-token.js';
import type { Queryable } from '../src/db/pool.js';
import { CLOSING_STATES, findTenant } from '../src/db/tenants-store.js';

/**
 * The one place errors become Temporal failures: `type` is the code from our closed list, the
 * message is redacted, and retryability follows the platform client's taxonomy. Tests assert the
 * type, never the message.
 */
export const OrchestratorErrorCode = {
  INVALID_INPUT: 'INVALID_INPUT',
  EXTERNAL_REF_CONFLICT: 'EXTERNAL_REF_CONFLICT',
  TENANT_NOT_FOUND: 'TENANT_NOT_FOUND',
  TENANT_CLOSED: 'TENANT_CLOSED',
  DUPLICATE_SUBACCOUNTS: 'DUPLICATE_SUBACCOUNTS',
  /** The platform answered the create's key as used, yet a scan of every sub-account found none with our ref. */
  SUBACCOUNT_UNRECONCILED: 'SUBACCOUNT_UNRECONCILED',
  PAGINATION_LOOP: 'PAGINATION_LOOP',
  TRANSFER_CONFLICT: 'TRANSFER_CONFLICT',
  /** A top-up's idempotency key was already used for another amount or reason. */
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  /** The tenant has no sub-account yet, or is not active or suspended. */
  TENANT_NOT_PROVISIONED: 'TENANT_NOT_PROVISIONED',
  KEY_RECORD_STATE: 'KEY_RECORD_STATE',
  SECRET_MISSING: 'SECRET_MISSING',
  BALANCE_BELOW_FLOOR: 'BALANCE_BELOW_FLOOR',
  CLEANUP_INCOMPLETE: 'CLEANUP_INCOMPLETE',
} as const;
export type OrchestratorErrorCode = (typeof OrchestratorErrorCode)[keyof typeof OrchestratorErrorCode];

export function definiteFailure(code: OrchestratorErrorCode, message: string, details?: Record<string, unknown>): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message: safeSnippet(message, 500), nonRetryable: true, details: details ? [details] : [] });
}

/**
 * Converts anything thrown by a platform call or the database into an ApplicationFailure.
 * Ambiguous failures are retried: every activity here retries a mutation only under the same
 * idempotency key, or looks for the earlier attempt's effect first (sub-account by external ref,
 * key by name, transfer by wallet), so a retry can never double an effect.
 */
export function toFailure(error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const classified = classifyError(error);
  return ApplicationFailure.create({
    type: classified.type,
    message: safeSnippet(classified.message, 500),
    nonRetryable: classified.classification === 'ambiguous' ? false : classified.nonRetryable,
    details: [
      {
        classification: classified.classification,
        status: classified.status ?? null,
        platformCode: classified.platformCode ?? null,
        requestId: classified.requestId ?? null,
      },
    ],
    ...(classified.retryAfterMs ? { nextRetryDelay: classified.retryAfterMs } : {}),
  });
}

/** New work (a transfer, a key) is refused once a close has begun. */
export async function assertTenantOpen(db: Queryable, externalRef: string): Promise<void> {
  const tenant = await findTenant(db, externalRef);
  if (tenant && CLOSING_STATES.includes(tenant.status)) {
    throw definiteFailure(OrchestratorErrorCode.TENANT_CLOSED, `tenant ${externalRef} is ${tenant.status}: no new transfers or keys`);
  }
}

/** Wraps an activity so every failure leaves it converted exactly once. */
export function boundary<I, O>(fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return async (input: I) => {
    try {
      return await fn(input);
    } catch (error) {
      throw toFailure(error);
    }
  };
}
