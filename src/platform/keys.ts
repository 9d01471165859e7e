import { parentAuthHeaders } from './auth.js';
import { callOf } from './call-options.js';
import { listAll, request, type ClientContext } from './core.js';
import { isObject } from './envelope.js';
import { asText, pick, type ParseContext } from './normalize.js';
import { KEY_ID_KEYS, parseApiKey, parseCreatedKey } from './parse-control.js';
import type { ApiKeyRecord } from './records.js';
import type { PlatformClient } from './types.js';
import { assertId, assertNonEmpty } from './validate.js';

type KeyMethods = Pick<
  PlatformClient,
  | 'listTenantKeys'
  | 'createTenantKey'
  | 'revokeTenantKey'
  | 'listPlatformKeys'
  | 'createPlatformKey'
  | 'revokePlatformKey'
>;

const KEY_LIST = {
  resourceKeys: ['keys', 'apiKeys', 'api_keys', 'platformKeys', 'credentials'],
  idOf: (item: Record<string, unknown>) => asText(pick(item, KEY_ID_KEYS)),
  parse: parseApiKey,
} as const;

/** Revoke answers are not shown: the record when one comes back, otherwise nothing. */
function revokedRecord(payload: unknown, ctx: ParseContext): ApiKeyRecord | undefined {
  const inner = isObject(payload) ? (pick(payload, ['key', 'apiKey', 'api_key']) ?? payload) : undefined;
  return isObject(inner) && asText(pick(inner, KEY_ID_KEYS)) !== undefined ? parseApiKey(inner, ctx) : undefined;
}

export function keyMethods(ctx: ClientContext): KeyMethods {
  const parent = (operation: string) => parentAuthHeaders(ctx.credentials, operation);
  /** Key creation has no idempotency in the contract: after an ambiguous failure, list keys and reconcile. */
  const createKey = async (
    operation: 'createTenantKey' | 'createPlatformKey',
    input: { name: string } & Parameters<typeof callOf>[0],
    params?: Record<string, string>,
  ) => {
    const body = { name: assertNonEmpty(input.name, 'name', operation) };
    const { requestId, value } = await request(
      ctx,
      {
        operation,
        method: 'POST',
        ...(params ? { params } : {}),
        headers: parent(operation),
        body,
        replaySafe: false,
        call: callOf(input),
      },
      parseCreatedKey,
    );
    return { requestId, ...value };
  };

  return {
    async listTenantKeys(input) {
      const operation = 'listTenantKeys';
      const subaccountId = assertId(input.subaccountId, 'subaccountId', operation);
      const outcome = await listAll(
        ctx,
        {
          operation,
          method: 'GET',
          params: { subaccountId },
          headers: parent(operation),
          replaySafe: false,
          call: callOf(input),
        },
        KEY_LIST,
      );
      return { requestId: outcome.requestId, requestIds: outcome.requestIds, keys: outcome.items };
    },

    async createTenantKey(input) {
      const operation = 'createTenantKey';
      return createKey(operation, input, { subaccountId: assertId(input.subaccountId, 'subaccountId', operation) });
    },

    async revokeTenantKey(input) {
      const operation = 'revokeTenantKey';
      const params = {
        subaccountId: assertId(input.subaccountId, 'subaccountId', operation),
        keyId: assertId(input.keyId, 'keyId', operation),
      };
      const { requestId, value } = await request(
        ctx,
        { operation, method: 'POST', params, headers: parent(operation), replaySafe: true, call: callOf(input) },
        revokedRecord,
      );
      return { requestId, key: value };
    },

    async listPlatformKeys(input) {
      const operation = 'listPlatformKeys';
      const outcome = await listAll(
        ctx,
        { operation, method: 'GET', headers: parent(operation), replaySafe: false, call: callOf(input) },
        KEY_LIST,
      );
      return { requestId: outcome.requestId, requestIds: outcome.requestIds, keys: outcome.items };
    },

    async createPlatformKey(input) {
      // The body of this call is not shown; `name` mirrors the tenant-key create call.
      return createKey('createPlatformKey', input);
    },

    async revokePlatformKey(input) {
      const operation = 'revokePlatformKey';
      const keyId = assertId(input.keyId, 'keyId', operation);
      const { requestId, value } = await request(
        ctx,
        {
          operation,
          method: 'POST',
          params: { keyId },
          headers: parent(operation),
          replaySafe: true,
          call: callOf(input),
        },
        revokedRecord,
      );
      return { requestId, key: value };
    },
  };
}
