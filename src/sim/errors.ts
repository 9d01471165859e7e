/**
 * The closed list of error codes the simulator answers with. The contract names only the Errors-table codes and
 * `project_not_found`; the rest are the simulator's documented choices (see CONTRACT-CHOICES.md).
 */
export const SimErrorCode = {
  Unauthorized: 'UNAUTHORIZED',
  CredentialNotAllowed: 'CREDENTIAL_NOT_ALLOWED',
  SubaccountScope: 'SUBACCOUNT_SCOPE',
  SubaccountSuspended: 'SUBACCOUNT_SUSPENDED',
  SubaccountNotFound: 'SUBACCOUNT_NOT_FOUND',
  SubaccountHasResources: 'SUBACCOUNT_HAS_RESOURCES',
  ProjectNotFound: 'project_not_found',
  ApiKeyNotFound: 'API_KEY_NOT_FOUND',
  WebhookNotFound: 'WEBHOOK_NOT_FOUND',
  ApiKeyLimitReached: 'API_KEY_LIMIT_REACHED',
  InsufficientBalance: 'INSUFFICIENT_BALANCE',
  IdempotencyKeyRequired: 'IDEMPOTENCY_KEY_REQUIRED',
  IdempotencyKeyMismatch: 'IDEMPOTENCY_KEY_MISMATCH',
  IdempotencyKeyReused: 'IDEMPOTENCY_KEY_REUSED',
  IdempotencyKeyInUse: 'IDEMPOTENCY_KEY_IN_USE',
  ValidationError: 'VALIDATION_ERROR',
  InvalidJson: 'INVALID_JSON',
  BadRequest: 'BAD_REQUEST',
  UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  RouteNotFound: 'ROUTE_NOT_FOUND',
  RateLimited: 'RATE_LIMITED',
  InternalError: 'INTERNAL_ERROR',
} as const;

export type SimErrorCode = (typeof SimErrorCode)[keyof typeof SimErrorCode];

/** A failure the simulator answers on purpose; anything else thrown is a simulator bug (answered 500). */
export class SimError extends Error {
  override name = 'SimError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Absent, closed and foreign tenants must be indistinguishable: one constructor, one code, one message. */
export function subaccountNotFound(): SimError {
  return new SimError(404, SimErrorCode.SubaccountNotFound, 'Sub-account not found.');
}

export function projectNotFound(): SimError {
  return new SimError(404, SimErrorCode.ProjectNotFound, 'Project not found.');
}

export function validationError(field: string, problem: string): SimError {
  return new SimError(400, SimErrorCode.ValidationError, `${field}: ${problem}`);
}
