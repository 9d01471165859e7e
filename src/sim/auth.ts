import type { FastifyRequest } from 'fastify';
import { SimError, SimErrorCode, subaccountNotFound } from './errors.js';
import { hashToken } from './ids.js';
import type { ApiKeyRecord, PersonalTokenRecord, SimState, SubaccountRecord } from './state.js';

export type Caller =
  | { kind: 'tenant'; parentId: string; subaccountId: string; key: ApiKeyRecord }
  | { kind: 'platform'; parentId: string; key: ApiKeyRecord }
  | { kind: 'personal'; parentId: string; token: PersonalTokenRecord };

/** The tenant a resource call acts for; `subaccountId: null` is the parent's own context. */
export interface ResourceContext {
  parentId: string;
  subaccountId: string | null;
  /**
   * A personal token without X-Service-Subaccount: a human of the parent reaches every project of the parent and of
   * its tenants by project id (lists and creates still act in the parent's own context).
   */
  byProjectId: boolean;
}

const BEARER = /^Bearer +(\S+) *$/i;

function unauthorized(message: string): SimError {
  return new SimError(401, SimErrorCode.Unauthorized, message, { 'WWW-Authenticate': 'Bearer' });
}

/**
 * Resolves the bearer token and records its last use (sim clock). Unknown, revoked and closed-tenant keys are all
 * the same 401 so that a probe learns nothing about which tokens once existed.
 */
export function authenticate(state: SimState, request: FastifyRequest, now: number): Caller {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? BEARER.exec(header) : null;
  if (!match?.[1]) throw unauthorized('Missing bearer token: send Authorization: Bearer <token>.');
  const tokenHash = hashToken(match[1]);

  const key = state.apiKeysByHash.get(tokenHash);
  if (key) {
    const tenant = key.subaccountId === null ? undefined : state.subaccounts.get(key.subaccountId);
    if (key.status !== 'active' || tenant?.status === 'closed') throw unauthorized('Invalid or revoked token.');
    key.lastUsedAt = now;
    key.useCount += 1;
    if (key.kind === 'platform') return { kind: 'platform', parentId: key.parentId, key };
    return { kind: 'tenant', parentId: key.parentId, subaccountId: key.subaccountId ?? '', key };
  }
  const personal = state.personalTokensByHash.get(tokenHash);
  if (personal) {
    personal.lastUsedAt = now;
    return { kind: 'personal', parentId: personal.parentId, token: personal };
  }
  throw unauthorized('Invalid or revoked token.');
}

/** Control-plane calls are made with parent credentials: a platform key or a parent's personal token. */
export function requireParent(caller: Caller): string {
  if (caller.kind === 'tenant') {
    throw new SimError(
      403,
      SimErrorCode.CredentialNotAllowed,
      'This endpoint needs parent credentials (platform key or personal access token); tenant keys are not allowed.',
    );
  }
  return caller.parentId;
}

/** Contract rule 4 and rule 6: some endpoints are for humans only. */
export function requirePersonal(caller: Caller, what: string): void {
  if (caller.kind !== 'personal') {
    throw new SimError(403, SimErrorCode.CredentialNotAllowed, `${what} requires a personal access token (sv_).`);
  }
}

/** Closed, absent and foreign tenants answer the same 404 on control-plane paths. */
export function getOwnedSubaccount(state: SimState, parentId: string, subaccountId: string): SubaccountRecord {
  const tenant = state.subaccounts.get(subaccountId);
  if (!tenant || tenant.parentId !== parentId || tenant.status === 'closed') throw subaccountNotFound();
  return tenant;
}

function scopeError(): SimError {
  return new SimError(
    403,
    SimErrorCode.SubaccountScope,
    "The tenant context is outside this credential's scope. Do not retry: fix the credential or header.",
  );
}

function suspendedError(): SimError {
  return new SimError(403, SimErrorCode.SubaccountSuspended, 'The sub-account is suspended.');
}

/**
 * Tenant context for resource calls: a tenant key carries its own (a different X-Service-Subaccount is a scope
 * error); platform keys and personal tokens name an owned tenant in the header, or act for the parent without it.
 * Absent and closed tenants in the header are SUBACCOUNT_SCOPE like foreign ones, revealing nothing.
 */
export function resolveResourceContext(
  state: SimState,
  caller: Caller,
  request: FastifyRequest,
  personalHeader: 'accept' | 'refuse' = 'accept',
): ResourceContext {
  const raw = request.headers['x-service-subaccount'];
  const header = Array.isArray(raw) ? raw.join(',') : raw?.trim();
  if (caller.kind === 'tenant') {
    if (header !== undefined && header !== caller.subaccountId) throw scopeError();
    const tenant = state.subaccounts.get(caller.subaccountId);
    if (tenant?.status === 'suspended') throw suspendedError();
    return { parentId: caller.parentId, subaccountId: caller.subaccountId, byProjectId: false };
  }
  if (header === undefined)
    return { parentId: caller.parentId, subaccountId: null, byProjectId: caller.kind === 'personal' };
  // The contract's table: a personal token adds no tenant context. A strict platform refuses one that tries.
  if (caller.kind === 'personal' && personalHeader === 'refuse') throw scopeError();
  const tenant = state.subaccounts.get(header);
  if (!tenant || tenant.parentId !== caller.parentId || tenant.status === 'closed') throw scopeError();
  if (tenant.status === 'suspended') throw suspendedError();
  return { parentId: caller.parentId, subaccountId: tenant.id, byProjectId: false };
}

/** The tenant state check a by-id project call of a personal token makes on the project's own tenant. */
export function checkProjectTenant(state: SimState, subaccountId: string | null): boolean {
  if (subaccountId === null) return true;
  const tenant = state.subaccounts.get(subaccountId);
  if (!tenant || tenant.status === 'closed') return false;
  if (tenant.status === 'suspended') throw suspendedError();
  return true;
}
