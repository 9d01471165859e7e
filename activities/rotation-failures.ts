import { ApplicationFailure } from '@temporalio/common';
import { safeSnippet } from '../src/platform/secret-token.js';

/**
 * Failure types of rotation (ApplicationFailure.type), beside activities/failures.ts's
 * OrchestratorErrorCode whose TENANT_NOT_FOUND / TENANT_CLOSED / KEY_RECORD_STATE are reused.
 */
export const RotationErrorCode = {
  TENANT_NOT_FOUND: 'TENANT_NOT_FOUND',
  TENANT_CLOSED: 'TENANT_CLOSED',
  TENANT_NOT_ACTIVE: 'TENANT_NOT_ACTIVE',
  NO_ACTIVE_KEY: 'NO_ACTIVE_KEY',
  API_KEY_LIMIT_REACHED: 'API_KEY_LIMIT_REACHED',
  DEPLOYER_NOT_CONFIGURED: 'DEPLOYER_NOT_CONFIGURED',
  DEPLOY_TARGET_MISSING: 'DEPLOY_TARGET_MISSING',
  DEPLOY_ENDPOINT_REFUSED: 'DEPLOY_ENDPOINT_REFUSED',
  ROTATION_ABORTED: 'ROTATION_ABORTED',
  SECRET_MISSING: 'SECRET_MISSING',
  /** The revoke's own re-read saw the old key's last use move since the quiet gate passed: nothing was revoked. */
  KEY_IN_USE: 'KEY_IN_USE',
} as const;
export type RotationErrorCode = (typeof RotationErrorCode)[keyof typeof RotationErrorCode];

export function rotationFailure(code: RotationErrorCode, message: string, options: { details?: Record<string, unknown>; retryable?: boolean } = {}): ApplicationFailure {
  return ApplicationFailure.create({
    type: code,
    message: safeSnippet(message, 500),
    nonRetryable: !options.retryable,
    details: options.details ? [options.details] : [],
  });
}
