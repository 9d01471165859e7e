/**
 * Callers are identities: `OPERATORS=alice:sha256:<hex>,ci:viewer:sha256:<hex>` names each caller,
 * its role (src/secrets/roles.ts; `operator` when left out) and the SHA-256 of its token (the
 * configuration never holds a token itself). tenantctl and the gateway authenticate a presented
 * token against the list and audit under the name it maps to.
 *
 * Matching is constant time, like the gateway's bearer tokens: the presented token is hashed and
 * compared against every entry, so the time taken says nothing about which one (or how much) matched.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isRole, ROLES, type Role } from './roles.js';

export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,100}$/;
export const OPERATOR_ENTRY_RULE =
  `name[:role]:sha256:<64 hex digits> (name: 1-100 of A-Z a-z 0-9 . _ @ -; role: ${ROLES.join(', ')}; ` +
  'default operator)';
export const OPERATOR_TOKEN_PREFIX = 'tpo_op_';

/** An authenticated caller: who (audited) and what they may do. */
export interface Identity {
  name: string;
  role: Role;
}

export interface OperatorEntry extends Identity {
  /** SHA-256 of the token, 32 bytes. */
  tokenHash: Buffer;
}

export type ParsedOperators = { ok: true; operators: OperatorEntry[] } | { ok: false; problems: string[] };

/** Parses the `OPERATORS` value; every problem by position (never echoing a value). */
export function parseOperatorList(text: string): ParsedOperators {
  const problems: string[] = [];
  const operators: OperatorEntry[] = [];
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  entries.forEach((entry, index) => {
    const match = /^([^:]+):(?:([^:]+):)?sha256:([0-9a-fA-F]{64})$/.exec(entry);
    const role = match?.[2] ?? 'operator';
    if (!match || !OPERATOR_NAME_PATTERN.test(match[1]!) || !isRole(role)) {
      problems.push(`entry ${index + 1} must be ${OPERATOR_ENTRY_RULE}`);
      return;
    }
    const tokenHash = Buffer.from(match[3]!, 'hex');
    if (operators.some((o) => o.name === match[1])) problems.push(`entry ${index + 1} repeats the name ${match[1]}`);
    else if (operators.some((o) => o.tokenHash.equals(tokenHash)))
      problems.push(`entry ${index + 1} (${match[1]}) has the same token as another operator`);
    else operators.push({ name: match[1]!, role, tokenHash });
  });
  if (entries.length === 0) problems.push(`must list at least one ${OPERATOR_ENTRY_RULE}`);
  return problems.length ? { ok: false, problems } : { ok: true, operators };
}

export function hashOperatorToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** A new identity: a random token (shown once) and the `OPERATORS` entry that names its hash and role. */
export function generateOperator(name: string, role: Role = 'operator'): { token: string; entry: string } {
  if (!OPERATOR_NAME_PATTERN.test(name)) throw new Error(`name: must be 1-100 of A-Z a-z 0-9 . _ @ -`);
  if (!isRole(role)) throw new Error(`role: must be one of ${ROLES.join(', ')}`);
  const token = `${OPERATOR_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const rolePart = role === 'operator' ? '' : `${role}:`;
  return { token, entry: `${name}:${rolePart}sha256:${hashOperatorToken(token).toString('hex')}` };
}

export interface OperatorDirectory {
  /** 0: no list is configured. */
  readonly size: number;
  /** The identity's name, or undefined for an unknown token. */
  authenticate(token: string): string | undefined;
  /** The identity (name and role), or undefined for an unknown token. */
  identify(token: string): Identity | undefined;
}

export function createOperatorDirectory(operators: readonly OperatorEntry[]): OperatorDirectory {
  const identify = (token: string): Identity | undefined => {
    const candidate = hashOperatorToken(token);
    let found: OperatorEntry | undefined;
    // Every entry is compared: the time taken says nothing about which one matched.
    for (const operator of operators) {
      if (timingSafeEqual(operator.tokenHash, candidate)) found ??= operator;
    }
    return found && { name: found.name, role: found.role };
  };
  return {
    size: operators.length,
    identify,
    authenticate: (token) => identify(token)?.name,
  };
}

export class UnknownOperatorError extends Error {
  override name = 'UnknownOperatorError';
}
