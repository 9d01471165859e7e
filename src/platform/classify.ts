import { Classification, PlatformError, PlatformErrorCode, type PlatformErrorJson } from './errors.js';
import { safeSnippet } from './secret-token.js';

/**
 * Everything an activity needs to build `ApplicationFailure.create({ type, message, nonRetryable, details })`
 * without this module importing Temporal. Plain data: safe to log, to put in a payload, to compare in tests.
 */
export interface ClassifiedError extends PlatformErrorJson {
  /** Same as `code`: the ApplicationFailure type. */
  type: PlatformErrorCode;
  nonRetryable: boolean;
}

export function classifyError(err: unknown): ClassifiedError {
  if (err instanceof PlatformError) {
    const json = err.toJSON();
    return { ...json, type: json.code, nonRetryable: !json.retryable };
  }
  // Not ours (a bug, an unexpected throw). We cannot tell whether a mutation went out, so it is ambiguous;
  // activities always retry with the same idempotency key, so letting Temporal retry is the lesser risk.
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return {
    name: err instanceof Error ? err.name : 'Error',
    code: PlatformErrorCode.UNEXPECTED_ERROR,
    type: PlatformErrorCode.UNEXPECTED_ERROR,
    classification: Classification.ambiguous,
    retryable: true,
    nonRetryable: false,
    message: safeSnippet(message, 500),
  };
}
