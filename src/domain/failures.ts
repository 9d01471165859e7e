import { ApplicationFailure } from '@temporalio/common';

/**
 * The one closed list of failure codes we raise: each is the `type` of an ApplicationFailure, so
 * callers (workflows, the CLI, the gateway, tests) match on the type, never the message. The
 * platform client's own taxonomy (PLATFORM_*, see src/platform/classify.ts) comes on top of it.
 * Workflow-safe: no I/O, only @temporalio/common.
 */
export const FailureCode = {
  INVALID_INPUT: 'INVALID_INPUT',
  EXTERNAL_REF_CONFLICT: 'EXTERNAL_REF_CONFLICT',
  TENANT_NOT_FOUND: 'TENANT_NOT_FOUND',
  TENANT_CLOSED: 'TENANT_CLOSED',
  TENANT_NOT_ACTIVE: 'TENANT_NOT_ACTIVE',
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
  /**
   * A newer attempt of the same key create claimed the record while this one ran (two attempts at once): this one
   * stored nothing and revoked the key it made; retried, it finds the newer attempt's key or claims again.
   */
  KEY_ATTEMPT_SUPERSEDED: 'KEY_ATTEMPT_SUPERSEDED',
  /**
   * A key this orchestrator had just created failed its first use (401) after the proof's retries (details:
   * rejectedKeys): retryable while the bound allows a next key, final (non-retryable) past it.
   */
  KEY_REJECTED: 'KEY_REJECTED',
  SECRET_MISSING: 'SECRET_MISSING',
  BALANCE_BELOW_FLOOR: 'BALANCE_BELOW_FLOOR',
  /** close gave up: the tenant still had resources after every cleanup round. */
  CLEANUP_INCOMPLETE: 'CLEANUP_INCOMPLETE',
  NO_ACTIVE_KEY: 'NO_ACTIVE_KEY',
  API_KEY_LIMIT_REACHED: 'API_KEY_LIMIT_REACHED',
  DEPLOYER_NOT_CONFIGURED: 'DEPLOYER_NOT_CONFIGURED',
  DEPLOY_TARGET_MISSING: 'DEPLOY_TARGET_MISSING',
  DEPLOY_ENDPOINT_REFUSED: 'DEPLOY_ENDPOINT_REFUSED',
  ROTATION_ABORTED: 'ROTATION_ABORTED',
  /** A close waits (retrying) until the tenant's open rotations have finished. */
  ROTATION_STILL_OPEN: 'ROTATION_STILL_OPEN',
  /** The revoke's own re-read saw the old key's last use move since the quiet gate passed: nothing was revoked. */
  KEY_IN_USE: 'KEY_IN_USE',
  /**
   * Not an error: a quiet gate's watch looked and saw nothing to judge yet (activities/keys/watch-key-usage.ts). A
   * benign retryable failure, whose retry after `nextRetryDelay` is the gate's next look; never seen by a workflow.
   */
  QUIET_GATE_WATCHING: 'QUIET_GATE_WATCHING',
  /** An operator decision with a field missing, malformed, out of its closed set or unknown. */
  INVALID_DECISION: 'INVALID_DECISION',
  /** A well-formed decision the run is not waiting for (e.g. no transfer needs an operator). */
  DECISION_NOT_APPLICABLE: 'DECISION_NOT_APPLICABLE',
  /** A decision the worker's APPROVAL_POLICY gates came without an approval id: nothing was done. */
  APPROVAL_REQUIRED: 'APPROVAL_REQUIRED',
  /**
   * The approval a decision carried cannot be used for it (details.why: not_found, not_approved, expired,
   * used, self_approved, other_action, other_tenant, other_run, other_verdict, other_operator): nothing was done.
   */
  APPROVAL_NOT_VALID: 'APPROVAL_NOT_VALID',
  /** A close is scheduled for the tenant (suspended, waiting out its window): resume is refused; cancel the close. */
  CLOSE_SCHEDULED: 'CLOSE_SCHEDULED',
  /** An onboarding's preflight found a check that cannot pass: nothing was created. */
  PREFLIGHT_FAILED: 'PREFLIGHT_FAILED',
  /** An adoption rotation of a slot that holds no `unmanaged` key (nothing imported is left to replace). */
  NO_UNMANAGED_KEY: 'NO_UNMANAGED_KEY',
  /**
   * A new top-up of a tenant whose records were restored from a backup: it waits for a drift check of the tenant
   * (which records the transfers the restore lost) before money moves again.
   */
  RECORDS_RESTORED: 'RECORDS_RESTORED',
} as const;
export type FailureCode = (typeof FailureCode)[keyof typeof FailureCode];

export interface CodedFailureOptions {
  /** One details entry (ApplicationFailure.details[0]); omitted: no details. */
  details?: unknown;
  /** Default false: a coded failure is definite, and retrying it would only fail the same way. */
  retryable?: boolean;
}

/** The one way to raise a failure of ours: `type` is the code, retryability explicit. */
export function codedFailure(
  code: FailureCode,
  message: string,
  options: CodedFailureOptions = {},
): ApplicationFailure {
  return ApplicationFailure.create({
    type: code,
    message,
    nonRetryable: !options.retryable,
    details: options.details === undefined ? [] : [options.details],
  });
}
