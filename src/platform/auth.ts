import { PlatformErrorCode, PlatformInputError } from './errors.js';
import { SecretToken, type TokenPrefix } from './secret-token.js';
import { assertId } from './validate.js';

/**
 * Who a resource call acts as (contract, "Authentication"). Explicit on every call so a tenant's request can never
 * silently run under the parent's identity.
 * - `tenant-key`: the tenant is derived from the key; we never send X-Service-Subaccount (a conflicting header is
 *   403 SUBACCOUNT_SCOPE).
 * - `platform`: the parent's platform key, targeting one tenant with X-Service-Subaccount. The id must come from our
 *   own ownership records, never straight from a customer.
 * - `personal`: a human's token. It never carries X-Service-Subaccount: the contract's table gives it no tenant
 *   context ("None added"), and a platform may answer the header with 403 SUBACCOUNT_SCOPE. A tenant's project is
 *   reached by its project id (the parent's token holds the parent's project permissions).
 */
export type ResourceAuth =
  | { kind: 'tenant-key'; token: SecretToken | string }
  | { kind: 'platform'; subaccountId: string }
  | { kind: 'personal' };

export interface ParentCredentials {
  platformKey: SecretToken | undefined;
  personalToken: SecretToken | undefined;
}

export const SUBACCOUNT_HEADER = 'X-Service-Subaccount';

/**
 * Where a long-running process gets the parent's platform key: our sealed records, not a variable. `current()` is
 * the cached credential (read on every call, so a switch takes effect on the next call); after a 401 answered to
 * the platform key, the client asks `refreshAfterUnauthorized` once and retries the call with the credential it
 * returns (undefined: the records hold nothing newer, the 401 stands).
 */
export interface PlatformKeyProvider {
  current(): SecretToken | undefined;
  refreshAfterUnauthorized(rejected: SecretToken): Promise<SecretToken | undefined>;
}

export function isPlatformKeyProvider(value: unknown): value is PlatformKeyProvider {
  return (
    typeof value === 'object' &&
    value !== null &&
    !(value instanceof SecretToken) &&
    typeof (value as PlatformKeyProvider).current === 'function' &&
    typeof (value as PlatformKeyProvider).refreshAfterUnauthorized === 'function'
  );
}

export function credentialFromOption(
  value: SecretToken | string | undefined,
  expected: TokenPrefix,
  option: string,
): SecretToken | undefined {
  if (value === undefined) return undefined;
  const given: unknown = value;
  const token =
    given instanceof SecretToken || (typeof given === 'string' && given !== '') ? SecretToken.from(given) : undefined;
  if (token?.prefix !== expected) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: `createPlatformClient: ${option} must be a credential starting with ${expected}`,
    });
  }
  return token;
}

function bearer(token: SecretToken): Record<string, string> {
  return { Authorization: `Bearer ${token.reveal()}` };
}

/** Control-plane calls need parent credentials (rule 1): the platform key, else a personal token. */
export function parentAuthHeaders(credentials: ParentCredentials, operation: string): Record<string, string> {
  const token = credentials.platformKey ?? credentials.personalToken;
  if (!token) {
    throw new PlatformInputError({
      code: PlatformErrorCode.MISSING_CREDENTIALS,
      message: `${operation}: control-plane calls need parent credentials (platformKey or personalToken)`,
    });
  }
  return bearer(token);
}

export function resourceAuthHeaders(
  auth: ResourceAuth | undefined,
  credentials: ParentCredentials,
  operation: string,
): Record<string, string> {
  switch (auth?.kind) {
    case 'tenant-key': {
      const given: unknown = auth.token;
      const token =
        given instanceof SecretToken || (typeof given === 'string' && given !== '')
          ? SecretToken.from(given)
          : undefined;
      if (token?.prefix !== 'svsk_') {
        throw new PlatformInputError({
          code: PlatformErrorCode.INVALID_INPUT,
          message: `${operation}: auth.token must be a tenant key (prefix svsk_)`,
        });
      }
      return bearer(token);
    }
    case 'platform': {
      if (!credentials.platformKey) {
        throw new PlatformInputError({
          code: PlatformErrorCode.MISSING_CREDENTIALS,
          message: `${operation}: platform auth needs the client's platformKey`,
        });
      }
      const subaccountId = assertId(auth.subaccountId, 'auth.subaccountId', operation);
      return { ...bearer(credentials.platformKey), [SUBACCOUNT_HEADER]: subaccountId };
    }
    case 'personal': {
      if (!credentials.personalToken) {
        throw new PlatformInputError({
          code: PlatformErrorCode.MISSING_CREDENTIALS,
          message: `${operation}: personal auth needs the client's personalToken`,
        });
      }
      if ('subaccountId' in auth) {
        // Refused locally (plain JS callers): sending it would be a scope error on a strict platform.
        throw new PlatformInputError({
          code: PlatformErrorCode.INVALID_INPUT,
          message:
            `${operation}: a personal token carries no tenant context; address the tenant's ` +
            `project by its id (no subaccountId)`,
        });
      }
      return bearer(credentials.personalToken);
    }
    default:
      throw new PlatformInputError({
        code: PlatformErrorCode.INVALID_INPUT,
        message: `${operation}: auth must be { kind: 'tenant-key' | 'platform' | 'personal', ... }`,
      });
  }
}
