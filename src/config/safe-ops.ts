import { z } from 'zod';
import { closeDelayProblem, DURATION_PATTERN, msOf } from '../domain/durations.js';
import { parseOperatorList } from '../domain/operator-list.js';
import { DEFAULTS, SAFE_OPS_DEFAULTS } from './defaults.js';
import { area, checkedText, emptyToUndefined, setting } from './helpers.js';

/**
 * Settings of the dangerous-operation guards (issue 22). One rule sets the defaults: with an
 * `OPERATORS` list (production) the safe ones apply — closes wait 30 days and `resolveTransfer` and
 * `keyReveal` need a second operator; without one (the dev stack, where names are typed, not
 * authenticated) nothing changes from before.
 */
export const APPROVAL_ACTIONS = ['resolveTransfer', 'keyReveal'] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

export const safeOpsSettings = area('safe-ops', {
  OPERATORS: setting(
    checkedText((value) => {
      const parsed = parseOperatorList(value);
      return parsed.ok ? [] : parsed.problems;
    }) as z.ZodType<string | undefined>,
    {
      description:
        'Callers, their roles and the SHA-256 of their tokens, `name[:role]:sha256:<hex>` comma-separated, role ' +
        '`viewer`, `backend`, `operator` (default) or `admin` (`tenantctl operators add <name> --role R` prints a ' +
        'token and its entry); tenantctl and `/v1` record the authenticated name, never a typed one ' +
        '([security.md](security.md)).',
      unset: 'names are typed, not authenticated',
      devStack: 'one admin `dev`, its token in `.data/dev-operator-token`',
    },
  ),
  CLOSE_DELAY: setting(
    checkedText((value) => {
      const problem = closeDelayProblem(value);
      return problem ? [problem] : [];
    }) as z.ZodType<string | undefined>,
    {
      description:
        'Default and minimum of `close --after` (only an admin closes sooner): the tenant is suspended at once ' +
        'and closed when the window ends; `0` closes at once; at most `365d`.',
      unset:
        `\`${SAFE_OPS_DEFAULTS.withOperators.CLOSE_DELAY}\` with \`OPERATORS\`, else ` +
        `\`${SAFE_OPS_DEFAULTS.withoutOperators.CLOSE_DELAY}\``,
      devStack: `\`${SAFE_OPS_DEFAULTS.withoutOperators.CLOSE_DELAY}\``,
    },
  ),
  APPROVAL_POLICY: setting(
    checkedText((value) =>
      value.trim() === 'none'
        ? []
        : value
            .split(',')
            .map((item) => item.trim())
            .filter((item) => !(APPROVAL_ACTIONS as readonly string[]).includes(item))
            .map(() => `must be none or a comma-separated list of ${APPROVAL_ACTIONS.join(', ')}`),
    ) as z.ZodType<string | undefined>,
    {
      description:
        'Actions that wait for a second operator: `none` or a list of ' +
        `${APPROVAL_ACTIONS.map((a) => `\`${a}\``).join(', ')} (needs \`OPERATORS\`); the server's, never the ` +
        `caller's.`,
      unset: 'all of them with `OPERATORS`, else `none`',
      devStack: '`none`',
    },
  ),
  APPROVAL_TTL: setting(
    z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(DURATION_PATTERN, 'must be a duration like 30m, 24h, 7d')
        .refine((value) => !DURATION_PATTERN.test(value) || msOf(value) > 0, 'must be longer than zero')
        .default(DEFAULTS.APPROVAL_TTL),
    ),
    {
      description: 'An approval request not decided within this expires; nothing is done.',
      advanced: true,
    },
  ),
});

export interface SafeOpsEnv {
  OPERATORS?: string | undefined;
  CLOSE_DELAY?: string | undefined;
  APPROVAL_POLICY?: string | undefined;
  APPROVAL_TTL: string;
}

/** Cross-field problems (a policy that needs identities none are configured for). */
export function safeOpsProblems(env: SafeOpsEnv): string[] {
  const wants = env.APPROVAL_POLICY && env.APPROVAL_POLICY.trim() !== 'none';
  return wants && !env.OPERATORS
    ? ['APPROVAL_POLICY: needs OPERATORS (a second operator can only be told apart by identity)']
    : [];
}
