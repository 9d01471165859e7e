/**
 * One error base class with precise subclasses (docs/architecture.md, "Platform client"). Every failure carries a
 * code from our closed list, the platform's raw code when it sent one, the request id, and a classification that
 * tells the caller what is safe to do next. Messages are built from redacted text only (see http-errors.ts).
 */

export const PlatformErrorCode = {
  // definite: the platform answered and nothing will change by retrying
  VALIDATION_FAILED: 'VALIDATION_FAILED',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  SUBACCOUNT_SCOPE: 'SUBACCOUNT_SCOPE',
  NOT_FOUND: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  IDEMPOTENCY_KEY_REQUIRED: 'IDEMPOTENCY_KEY_REQUIRED',
  CLIENT_ERROR: 'CLIENT_ERROR',
  PROTOCOL_ERROR: 'PROTOCOL_ERROR',
  PAGINATION_LOOP: 'PAGINATION_LOOP',
  PAGINATION_LIMIT: 'PAGINATION_LIMIT',
  // definite, raised before anything was sent
  INVALID_INPUT: 'INVALID_INPUT',
  INVALID_IDEMPOTENCY_KEY: 'INVALID_IDEMPOTENCY_KEY',
  MISSING_CREDENTIALS: 'MISSING_CREDENTIALS',
  // tenant state
  SUBACCOUNT_SUSPENDED: 'SUBACCOUNT_SUSPENDED',
  // business state
  API_KEY_LIMIT_REACHED: 'API_KEY_LIMIT_REACHED',
  INSUFFICIENT_BALANCE: 'INSUFFICIENT_BALANCE',
  IDEMPOTENCY_CONFLICT: 'IDEMPOTENCY_CONFLICT',
  // transient: the request had no effect
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  RATE_LIMITED: 'RATE_LIMITED',
  SERVER_ERROR: 'SERVER_ERROR',
  NETWORK_ERROR: 'NETWORK_ERROR',
  // transient on reads, ambiguous on mutations
  TIMEOUT: 'TIMEOUT',
  CONNECTION_LOST: 'CONNECTION_LOST',
  CANCELLED: 'CANCELLED',
  // anything that is not a PlatformError, seen by classifyError
  UNEXPECTED_ERROR: 'UNEXPECTED_ERROR',
} as const;
export type PlatformErrorCode = (typeof PlatformErrorCode)[keyof typeof PlatformErrorCode];

export const Classification = {
  definite: 'definite',
  tenantState: 'tenant-state',
  businessState: 'business-state',
  transient: 'transient',
  ambiguous: 'ambiguous',
} as const;
export type Classification = (typeof Classification)[keyof typeof Classification];

export interface PlatformErrorInit {
  code: PlatformErrorCode;
  message: string;
  platformCode?: string | undefined;
  status?: number | undefined;
  requestId?: string | undefined;
  method?: string | undefined;
  path?: string | undefined;
  retryAfterMs?: number | undefined;
  /** Safe, non-secret facts that help reconciliation (e.g. the id of a key whose token was lost). */
  details?: Record<string, string> | undefined;
  cause?: unknown;
}

/** The serialisable face of an error: what activities turn into an ApplicationFailure. */
export interface PlatformErrorJson {
  name: string;
  code: PlatformErrorCode;
  classification: Classification;
  retryable: boolean;
  message: string;
  platformCode?: string | undefined;
  status?: number | undefined;
  requestId?: string | undefined;
  method?: string | undefined;
  path?: string | undefined;
  retryAfterMs?: number | undefined;
  details?: Record<string, string> | undefined;
}

export abstract class PlatformError extends Error {
  abstract readonly classification: Classification;
  abstract readonly retryable: boolean;
  readonly code: PlatformErrorCode;
  readonly platformCode: string | undefined;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, string> | undefined;

  constructor(init: PlatformErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'PlatformError';
    this.code = init.code;
    this.platformCode = init.platformCode;
    this.status = init.status;
    this.requestId = init.requestId;
    this.method = init.method;
    this.path = init.path;
    this.retryAfterMs = init.retryAfterMs;
    this.details = init.details;
  }

  toJSON(): PlatformErrorJson {
    return {
      name: this.name,
      code: this.code,
      classification: this.classification,
      retryable: this.retryable,
      message: this.message,
      platformCode: this.platformCode,
      status: this.status,
      requestId: this.requestId,
      method: this.method,
      path: this.path,
      retryAfterMs: this.retryAfterMs,
      details: this.details,
    };
  }
}

/** The platform refused (or we refused locally); the same request will fail the same way. */
export class PlatformDefiniteError extends PlatformError {
  readonly classification = Classification.definite;
  readonly retryable = false;
  constructor(init: PlatformErrorInit) {
    super(init);
    this.name = 'PlatformDefiniteError';
  }
}

/** 404: absent, closed, foreign or inaccessible; the platform deliberately does not say which. */
export class PlatformNotFoundError extends PlatformDefiniteError {
  constructor(init: Omit<PlatformErrorInit, 'code'>) {
    super({ ...init, code: PlatformErrorCode.NOT_FOUND });
    this.name = 'PlatformNotFoundError';
  }
}

/** A 2xx (or error) body we cannot use: missing required fields, wrong types, unreadable JSON. */
export class PlatformProtocolError extends PlatformDefiniteError {
  constructor(init: Omit<PlatformErrorInit, 'code'> & { code?: PlatformErrorCode }) {
    super({ ...init, code: init.code ?? PlatformErrorCode.PROTOCOL_ERROR });
    this.name = 'PlatformProtocolError';
  }
}

/** Pagination that would never end: a repeated cursor or more pages than `maxPages`. */
export class PlatformPaginationError extends PlatformDefiniteError {
  constructor(init: PlatformErrorInit) {
    super(init);
    this.name = 'PlatformPaginationError';
  }
}

/** Rejected locally, before anything was sent (bad idempotency key, amount, id, missing credentials). */
export class PlatformInputError extends PlatformDefiniteError {
  constructor(init: PlatformErrorInit) {
    super(init);
    this.name = 'PlatformInputError';
  }
}

/** 403 SUBACCOUNT_SUSPENDED: not a crash and not blindly retryable; the workflow decides (resume after review). */
export class PlatformTenantStateError extends PlatformError {
  readonly classification = Classification.tenantState;
  readonly retryable = false;
  constructor(init: PlatformErrorInit) {
    super(init);
    this.name = 'PlatformTenantStateError';
  }
}

/** 409 API_KEY_LIMIT_REACHED / INSUFFICIENT_BALANCE: a business condition the workflow waits out or fixes. */
export class PlatformBusinessStateError extends PlatformError {
  readonly classification = Classification.businessState;
  readonly retryable = false;
  constructor(init: PlatformErrorInit) {
    super(init);
    this.name = 'PlatformBusinessStateError';
  }
}

/**
 * The idempotency key was answered with a conflict instead of the original response (the contract does not show
 * which the platform does). The first request may well have succeeded: reconcile by lookup, do not retry blindly.
 */
export class PlatformIdempotencyConflictError extends PlatformBusinessStateError {
  constructor(init: Omit<PlatformErrorInit, 'code'>) {
    super({ ...init, code: PlatformErrorCode.IDEMPOTENCY_CONFLICT });
    this.name = 'PlatformIdempotencyConflictError';
  }
}

/** The request had no effect (or was a read): retrying, after `retryAfterMs` when given, is safe. */
export class PlatformTransientError extends PlatformError {
  readonly classification = Classification.transient;
  readonly retryable = true;
  constructor(init: PlatformErrorInit) {
    super(init);
    this.name = 'PlatformTransientError';
  }
}

/**
 * A mutation may or may not have taken effect (timeout, lost connection, 5xx after sending). Retrying is only safe
 * when the request is replay-safe (it carried an Idempotency-Key, or repeating it cannot duplicate an effect);
 * otherwise the caller must reconcile first, so `retryable` says which.
 */
export class PlatformAmbiguousError extends PlatformError {
  readonly classification = Classification.ambiguous;
  readonly retryable: boolean;
  constructor(init: PlatformErrorInit & { replaySafe: boolean }) {
    super(init);
    this.name = 'PlatformAmbiguousError';
    this.retryable = init.replaySafe;
  }
}
