// The typed platform client: envelope, auth contexts, idempotency, tolerant parsing and one error taxonomy.
export { createPlatformClient, DEFAULT_MAX_PAGES, DEFAULT_TIMEOUT_MS, type PlatformClientOptions } from './client.js';
export type * from './types.js';
export type { CallOptions, PageToken } from './core.js';
export type { PlatformKeyProvider, ResourceAuth } from './auth.js';
export { isPlatformKeyProvider } from './auth.js';
export { SUBACCOUNT_HEADER } from './auth.js';
export type {
  ApiKeyRecord,
  EnvVars,
  ProjectRecord,
  SubaccountRecord,
  TransferRecord,
  WalletRecord,
  WebhookDeliveryRecord,
  WebhookRecord,
} from './records.js';
export { KeyStatus, TenantStatus } from './status.js';
export { lastUseMoved, readKeyUse, type KeyUseInfo, type LastUse } from './last-use.js';
export { SecretToken, redactSecrets, TOKEN_PREFIXES, type TokenPrefix } from './secret-token.js';
export {
  Classification,
  PlatformAmbiguousError,
  PlatformBusinessStateError,
  PlatformDefiniteError,
  PlatformError,
  PlatformErrorCode,
  PlatformIdempotencyConflictError,
  PlatformInputError,
  PlatformNotFoundError,
  PlatformPaginationError,
  PlatformProtocolError,
  PlatformTenantStateError,
  PlatformTransientError,
  type PlatformErrorInit,
  type PlatformErrorJson,
} from './errors.js';
export { classifyError, type ClassifiedError } from './classify.js';
export { parseRetryAfter } from './retry-after.js';
export { assertIdempotencyKey } from './validate.js';
export { DEFAULT_PATHS, type PathName, type PathOverrides } from './paths.js';
export { defaultEnvVarsBody, type DeleteMethod } from './projects.js';
