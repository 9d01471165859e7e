/**
 * Callers are identities: `OPERATORS=alice:sha256:<hex>,ci:viewer:sha256:<hex>` names each caller,
 * its role (src/domain/roles.ts; `operator` when left out) and the SHA-256 of its token (the
 * configuration never holds a token itself). tenantctl and the gateway authenticate a presented
 * token against the list and audit under the name it maps to.
 *
 * Matching is constant time, like the gateway's bearer tokens: the presented token is hashed and
 * compared against every entry, so the time taken says nothing about which one (or how much) matched.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isRole, ROLES, type Role } from '../domain/roles.js';
import { OPERATOR_NAME_PATTERN, type Identity, type OperatorEntry } from '../domain/operator-list.js';

export {
  OPERATOR_ENTRY_RULE,
  OPERATOR_NAME_PATTERN,
  parseOperatorList,
  type Identity,
  type OperatorEntry,
  type ParsedOperators,
} from '../domain/operator-list.js';

export const OPERATOR_TOKEN_PREFIX = 'tpo_op_';

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
