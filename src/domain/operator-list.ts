import { isRole, ROLES, type Role } from './roles.js';

/**
 * The `OPERATORS` setting's entries, parsed: each caller's name, role and token hash (src/config checks the
 * setting with it; src/secrets/operators.ts authenticates against the entries).
 */
export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,100}$/;
export const OPERATOR_ENTRY_RULE =
  `name[:role]:sha256:<64 hex digits> (name: 1-100 of A-Z a-z 0-9 . _ @ -; role: ${ROLES.join(', ')}; ` +
  'default operator)';

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
