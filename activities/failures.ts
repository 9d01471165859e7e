import { ApplicationFailure } from '@temporalio/activity';
import { classifyError } from '../src/platform/index.js';
import { safeSnippet } from '../src/platform/secret-token.js';
import type { Queryable } from '../src/db/pool.js';
import { findTenant } from '../src/db/tenants-store.js';
import { isClosing, type TenantFacts, type TenantRule } from '../src/domain/tenant-rules.js';
import { codedFailure, FailureCode, type CodedFailureOptions } from '../src/domain/failures.js';

/**
 * The one place errors become Temporal failures: `type` is a code from src/domain/failures.ts's
 * closed list (or the platform client's taxonomy), the message is redacted, and retryability
 * follows that taxonomy. Tests assert the type, never the message.
 */
export function activityFailure(
  code: FailureCode,
  message: string,
  options: CodedFailureOptions = {},
): ApplicationFailure {
  return codedFailure(code, safeSnippet(message, 500), options);
}

/**
 * A tenant rule (src/domain/tenant-rules.ts) checked inside a running workflow: the starters refused the tenant
 * up front, but a close may have begun since, and runs started elsewhere (Web UI, schedules, fleet runs) meet
 * the rule here first. Its refusal becomes the activity's failure, with the rule's code and message; a tenant
 * missing from our records is TENANT_NOT_FOUND.
 */
export function assertTenantRule<T extends Omit<TenantFacts, 'externalRef'>>(
  rule: TenantRule,
  externalRef: string,
  tenant: T | undefined,
): asserts tenant is T & { subaccountId: string } {
  if (!tenant) throw activityFailure(FailureCode.TENANT_NOT_FOUND, `no tenant ${externalRef} in our records`);
  const refused = rule({ externalRef, status: tenant.status, subaccountId: tenant.subaccountId });
  if (refused) throw activityFailure(refused.code, refused.message);
  if (!tenant.subaccountId)
    throw activityFailure(FailureCode.TENANT_NOT_ACTIVE, `tenant ${externalRef} has no sub-account yet`);
}

/**
 * The tenant's record is gone under a run that may have moved money and cannot write it again (not an onboarding):
 * a restore of the records from a backup taken before the tenant was recorded. fundWallet answers it as a wait for
 * the runbook's import (the transfer may be made); any other step that meets it fails TENANT_NOT_FOUND (toFailure).
 */
export class TenantRecordGone extends Error {
  constructor(readonly externalRef: string) {
    super(
      `no tenant ${externalRef} in our records (restored from a backup taken before it?): waiting for the ` +
        `runbook's import to record it again (\`tenantctl import plan\`, then \`tenantctl import apply --only ` +
        `${externalRef}\`)`,
    );
    this.name = 'TenantRecordGone';
  }
}

/**
 * Converts anything thrown by a platform call or the database into an ApplicationFailure.
 * Ambiguous failures are retried: every activity here retries a mutation only under the same
 * idempotency key, or looks for the earlier attempt's effect first (sub-account by external ref,
 * key by name, transfer by wallet), so a retry can never double an effect.
 */
function toFailure(error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  // Outside the transfer step that waits for it (fundWallet), a tenant record gone is what it always was.
  if (error instanceof TenantRecordGone) return activityFailure(FailureCode.TENANT_NOT_FOUND, error.message);
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
  if (tenant && isClosing(tenant.status)) throw tenantClosed(externalRef, tenant.status);
}

/** The refusal of new work (a transfer, a key) for a tenant whose close has begun. */
export function tenantClosed(externalRef: string, status: string): ApplicationFailure {
  return activityFailure(FailureCode.TENANT_CLOSED, `tenant ${externalRef} is ${status}: no new transfers or keys`);
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
