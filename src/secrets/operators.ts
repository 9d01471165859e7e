/**
 * Operators are identities: `OPERATORS=alice:sha256:<hex>,bob:sha256:<hex>` names each operator
 * with the SHA-256 of their token (the configuration never holds a token itself). tenantctl and the
 * gateway authenticate a presented token against the list and audit under the name it maps to; a
 * typed name is only taken where no list is configured (the dev stack).
 *
 * Matching is constant time, like the gateway's bearer tokens: the presented token is hashed and
 * compared against every entry, so the time taken says nothing about which one (or how much) matched.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,100}$/;
export const OPERATOR_ENTRY_RULE = 'name:sha256:<64 hex digits> (name: 1-100 of A-Z a-z 0-9 . _ @ -)';
export const OPERATOR_TOKEN_PREFIX = 'tpo_op_';

export interface OperatorEntry {
  name: string;
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
    const match = /^([^:]+):sha256:([0-9a-fA-F]{64})$/.exec(entry);
    if (!match || !OPERATOR_NAME_PATTERN.test(match[1]!)) {
      problems.push(`entry ${index + 1} must be ${OPERATOR_ENTRY_RULE}`);
      return;
    }
    const tokenHash = Buffer.from(match[2]!, 'hex');
    if (operators.some((o) => o.name === match[1])) problems.push(`entry ${index + 1} repeats the name ${match[1]}`);
    else if (operators.some((o) => o.tokenHash.equals(tokenHash)))
      problems.push(`entry ${index + 1} (${match[1]}) has the same token as another operator`);
    else operators.push({ name: match[1]!, tokenHash });
  });
  if (entries.length === 0) problems.push(`must list at least one ${OPERATOR_ENTRY_RULE}`);
  return problems.length ? { ok: false, problems } : { ok: true, operators };
}

export function hashOperatorToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** A new operator: a random token (shown once) and the `OPERATORS` entry that names its hash. */
export function generateOperator(name: string): { token: string; entry: string } {
  if (!OPERATOR_NAME_PATTERN.test(name)) throw new Error(`name: must be 1-100 of A-Z a-z 0-9 . _ @ -`);
  const token = `${OPERATOR_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { token, entry: `${name}:sha256:${hashOperatorToken(token).toString('hex')}` };
}

export interface OperatorDirectory {
  /** 0: no list is configured (typed names are taken, as before). */
  readonly size: number;
  /** The operator's name, or undefined for an unknown token. */
  authenticate(token: string): string | undefined;
}

export function createOperatorDirectory(operators: readonly OperatorEntry[]): OperatorDirectory {
  return {
    size: operators.length,
    authenticate(token) {
      const candidate = hashOperatorToken(token);
      let found: string | undefined;
      for (const operator of operators) {
        if (timingSafeEqual(operator.tokenHash, candidate)) found ??= operator.name;
      }
      return found;
    },
  };
}

export class UnknownOperatorError extends Error {
  override name = 'UnknownOperatorError';
}
