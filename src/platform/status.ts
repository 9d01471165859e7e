import { isObject, type JsonObject } from './envelope.js';
import { pick } from './normalize.js';

// The contract names `suspended` and `closed` for tenants and `active`/`revoked` for keys; the rest is not shown.
// Known synonyms fold into a small set, anything else is `unknown`, and the platform's word is always kept as
// `rawStatus`, so a new status never breaks parsing and never gets silently mistaken for a known one.

export const TenantStatus = {
  operating: 'operating',
  suspended: 'suspended',
  closed: 'closed',
  unknown: 'unknown',
} as const;
export type TenantStatus = (typeof TenantStatus)[keyof typeof TenantStatus];

export const KeyStatus = {
  active: 'active',
  revoked: 'revoked',
  unknown: 'unknown',
} as const;
export type KeyStatus = (typeof KeyStatus)[keyof typeof KeyStatus];

const TENANT_WORDS: Record<string, TenantStatus> = {
  operating: 'operating',
  active: 'operating',
  ok: 'operating',
  enabled: 'operating',
  running: 'operating',
  ready: 'operating',
  suspended: 'suspended',
  paused: 'suspended',
  frozen: 'suspended',
  closed: 'closed',
  deleted: 'closed',
  terminated: 'closed',
};

const KEY_WORDS: Record<string, KeyStatus> = {
  active: 'active',
  enabled: 'active',
  ok: 'active',
  valid: 'active',
  operating: 'active',
  revoked: 'revoked',
  disabled: 'revoked',
  inactive: 'revoked',
  deleted: 'revoked',
  expired: 'revoked',
};

/** The status word, whether given as `status`, `state` or `status: { state | name | code }`. */
export function rawStatusOf(obj: JsonObject): string | undefined {
  const value = pick(obj, ['status', 'state']);
  if (typeof value === 'string') return value;
  if (isObject(value)) {
    const inner = pick(value, ['state', 'name', 'code', 'status']);
    return typeof inner === 'string' ? inner : undefined;
  }
  return undefined;
}

function fold(raw: string | undefined): string {
  return (raw ?? '').trim().toLowerCase();
}

export function tenantStatus(raw: string | undefined): TenantStatus {
  return TENANT_WORDS[fold(raw)] ?? TenantStatus.unknown;
}

/** Key status from the word, or from boolean hints (`revoked: true`, `revokedAt`, `active: false`) without one. */
export function keyStatus(raw: string | undefined, obj: JsonObject): KeyStatus {
  const word = KEY_WORDS[fold(raw)];
  if (word) return word;
  if (raw === undefined) {
    if (obj.revoked === true || typeof obj.revokedAt === 'string' || typeof obj.revoked_at === 'string')
      return 'revoked';
    if (obj.active === true || obj.revoked === false) return 'active';
    if (obj.active === false) return 'revoked';
  }
  return KeyStatus.unknown;
}
