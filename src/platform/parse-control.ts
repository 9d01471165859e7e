import { z } from 'zod';
import { isObject, type JsonObject } from './envelope.js';
import {
  asAmount,
  asObject,
  asRef,
  asText,
  asTimestamp,
  hasAny,
  pick,
  protocolError,
  requireObject,
  type ParseContext,
} from './normalize.js';
import { readKeyUse } from './last-use.js';
import type { ApiKeyRecord, SubaccountRecord, TransferRecord, WalletRecord } from './records.js';
import { SecretToken } from './secret-token.js';
import { keyStatus, rawStatusOf, tenantStatus } from './status.js';

const requiredId = z.string().min(1);

/** Validates the one field a record cannot do without; everything else is optional by design. */
export function requireId(value: unknown, what: string, ctx: ParseContext, details?: Record<string, string>): string {
  const result = requiredId.safeParse(value);
  if (!result.success) throw protocolError(ctx, `${what} has no id`, details);
  return result.data;
}

/** Accepts a record either bare or wrapped once (`{ subaccount: {...} }`), as long as the bare form has no id. */
export function unwrapRecord(value: unknown, idKeys: readonly string[], wrappers: readonly string[]): unknown {
  if (!isObject(value) || hasAny(value, idKeys)) return value;
  const inner = pick(value, wrappers);
  return isObject(inner) ? inner : value;
}

export const SUBACCOUNT_ID_KEYS = ['id', 'subaccountId', 'subaccount_id'] as const;
export const KEY_ID_KEYS = ['id', 'keyId', 'key_id', 'apiKeyId', 'api_key_id'] as const;
const TOKEN_KEYS = ['token', 'secret', 'key', 'apiKey', 'api_key'] as const;

export function parseSubaccount(value: unknown, ctx: ParseContext): SubaccountRecord {
  const obj = requireObject(unwrapRecord(value, SUBACCOUNT_ID_KEYS, ['subaccount', 'tenant']), 'a sub-account', ctx);
  const rawStatus = rawStatusOf(obj);
  return {
    id: requireId(asText(pick(obj, SUBACCOUNT_ID_KEYS)), 'the sub-account', ctx),
    name: asText(obj.name),
    externalRef: asText(pick(obj, ['externalRef', 'external_ref'])),
    status: tenantStatus(rawStatus),
    rawStatus,
    parentId: asRef(pick(obj, ['parentId', 'parent_id', 'parent'])),
    limits: asObject(obj.limits),
    createdAt: asTimestamp(pick(obj, ['createdAt', 'created_at'])),
  };
}

function lastUse(obj: JsonObject): Pick<ApiKeyRecord, 'lastUse' | 'useCount' | 'lastUsedAt' | 'lastUseKnown'> {
  const { lastUse: use, useCount } = readKeyUse(obj);
  const lastUsedAt = use.state === 'seen' ? use.at : use.state === 'never' ? null : undefined;
  return { lastUse: use, useCount, lastUsedAt, lastUseKnown: use.state !== 'unknown' };
}

export function parseApiKey(value: unknown, ctx: ParseContext): ApiKeyRecord {
  const obj = requireObject(value, 'a key record', ctx);
  const rawStatus = rawStatusOf(obj);
  return {
    id: requireId(asText(pick(obj, KEY_ID_KEYS)), 'the key record', ctx),
    name: asText(obj.name),
    status: keyStatus(rawStatus, obj),
    rawStatus,
    subaccountId: asRef(pick(obj, ['subaccountId', 'subaccount_id', 'subaccount'])),
    createdAt: asTimestamp(pick(obj, ['createdAt', 'created_at'])),
    ...lastUse(obj),
  };
}

/**
 * The create response carries the record and the secret, either flat (`{ id, name, token }`) or split
 * (`{ key: {...}, token }`). `key` may therefore be the record or the secret itself. A missing secret is a protocol
 * error that names the key id (never the token), so the caller can revoke the orphaned key.
 */
export function parseCreatedKey(value: unknown, ctx: ParseContext): { key: ApiKeyRecord; token: SecretToken } {
  const obj = requireObject(value, 'a created key', ctx);
  const nested = pick(obj, ['key', 'apiKey', 'api_key', 'record']);
  const recordSource = isObject(nested) ? nested : obj;
  const secret = [obj, recordSource]
    .flatMap((source) => TOKEN_KEYS.map((name) => source[name]))
    .find((candidate): candidate is string => typeof candidate === 'string' && candidate.length > 0);
  const keyId = asText(pick(recordSource, KEY_ID_KEYS));
  if (secret === undefined) {
    throw protocolError(ctx, 'the created key came back without its secret token', keyId ? { keyId } : undefined);
  }
  return { key: parseApiKey(recordSource, ctx), token: new SecretToken(secret) };
}

export function parseTransfer(value: unknown, ctx: ParseContext): TransferRecord {
  if (value === undefined || value === null) {
    return {
      id: undefined,
      subaccountId: undefined,
      amountMicroUsd: undefined,
      idempotencyKey: undefined,
      rawStatus: undefined,
      createdAt: undefined,
    };
  }
  const obj = requireObject(unwrapRecord(value, ['id', 'transferId', 'transfer_id'], ['transfer']), 'a transfer', ctx);
  return {
    id: asText(pick(obj, ['id', 'transferId', 'transfer_id'])),
    subaccountId: asRef(pick(obj, ['subaccountId', 'subaccount_id', 'subaccount'])),
    amountMicroUsd: asAmount(pick(obj, ['amountMicroUsd', 'amount_micro_usd', 'amount']), 'amountMicroUsd', ctx),
    idempotencyKey: asText(pick(obj, ['idempotencyKey', 'idempotency_key'])),
    rawStatus: rawStatusOf(obj),
    createdAt: asTimestamp(pick(obj, ['createdAt', 'created_at'])),
  };
}

const BALANCE_KEYS = [
  'balanceMicroUsd',
  'balance_micro_usd',
  'availableMicroUsd',
  'available_micro_usd',
  'paidBalanceMicroUsd',
  'balance',
] as const;

export function parseWallet(value: unknown, ctx: ParseContext): WalletRecord {
  const obj = requireObject(unwrapRecord(value, BALANCE_KEYS, ['wallet']), 'a wallet', ctx);
  let balance = pick(obj, BALANCE_KEYS);
  if (isObject(balance)) balance = pick(balance, ['microUsd', 'amountMicroUsd', 'amount', 'value']);
  const balanceMicroUsd = asAmount(balance, 'wallet balance', ctx);
  const transfers = pick(obj, ['transfers', 'recentTransfers', 'recent_transfers']);
  return {
    subaccountId: asRef(pick(obj, ['subaccountId', 'subaccount_id', 'subaccount'])),
    balanceMicroUsd,
    balanceKnown: balanceMicroUsd !== undefined,
    currency: asText(obj.currency),
    transfers: Array.isArray(transfers)
      ? transfers.filter(isObject).map((item) => parseTransfer(item, ctx))
      : undefined,
  };
}
