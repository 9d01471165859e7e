import { z } from 'zod';
import { closeDelayProblem, DURATION_PATTERN, msOf } from '../domain/durations.js';
import { createOperatorDirectory, parseOperatorList, type OperatorDirectory } from './operators.js';

/**
 * Settings of the dangerous-operation guards (issue 22), part of src/config.ts's schema. One rule
 * sets the defaults: with an `OPERATORS` list (production) the safe ones apply — closes wait 30 days
 * and `resolveTransfer` and `keyReveal` need a second operator; without one (the dev stack, where
 * names are typed, not authenticated) nothing changes from before.
 */
const emptyToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

export const APPROVAL_ACTIONS = ['resolveTransfer', 'keyReveal'] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

export const safeOpsConfigShape = {
  OPERATORS: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .superRefine((value, ctx) => {
          const parsed = parseOperatorList(value);
          if (!parsed.ok) for (const problem of parsed.problems) ctx.addIssue({ code: 'custom', message: problem });
        })
        .optional(),
    )
    .describe(
      'Callers, their roles and the SHA-256 of their tokens, name[:role]:sha256:<hex> comma-separated ' +
        '(`tenantctl operators add <name> --role R` makes one; role viewer, backend, operator (default) ' +
        'or admin). npm start: one dev admin.',
    ),
  TENANTCTL_OPERATOR_TOKEN: z
    .preprocess(emptyToUndefined, z.string().optional())
    .describe("tenantctl: this operator's token (or --operator-token); who every audited action is recorded as."),
  TENANTCTL_GATEWAY_URL: z
    .preprocess(
      emptyToUndefined,
      z.url({ protocol: /^https?$/, error: 'must be the http(s) URL of the gateway' }).optional(),
    )
    .describe(
      'tenantctl: the gateway its operator commands talk to (with TENANTCTL_OPERATOR_TOKEN). ' +
        'Unset: GATEWAY_PUBLIC_URL (the dev stack writes it to stack.json).',
    ),
  CLOSE_DELAY: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .superRefine((value, ctx) => {
          const problem = closeDelayProblem(value);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        })
        .optional(),
    )
    .describe(
      'Default of `close --after`: the tenant is suspended at once and closed after ' +
        'this (0: at once). Unset: 30d with OPERATORS, else 0.',
    ),
  APPROVAL_POLICY: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .superRefine((value, ctx) => {
          const items = value.split(',').map((item) => item.trim());
          if (value.trim() === 'none') return;
          for (const item of items)
            if (!(APPROVAL_ACTIONS as readonly string[]).includes(item))
              ctx.addIssue({
                code: 'custom',
                message: `must be none or a comma-separated list of ${APPROVAL_ACTIONS.join(', ')}`,
              });
        })
        .optional(),
    )
    .describe(
      'Actions that wait for a second operator: none or a list of resolveTransfer, ' +
        'keyReveal. Unset: both with OPERATORS, else none.',
    ),
  APPROVAL_TTL: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(DURATION_PATTERN, 'must be a duration like 30m, 24h, 7d')
        .refine((value) => !DURATION_PATTERN.test(value) || msOf(value) > 0, 'must be longer than zero')
        .default('24h'),
    )
    .describe('An approval request not decided within this expires (nothing happens).'),
};

export interface SafeOpsEnv {
  OPERATORS?: string | undefined;
  CLOSE_DELAY?: string | undefined;
  APPROVAL_POLICY?: string | undefined;
  APPROVAL_TTL: string;
}

export interface SafeOps {
  operators: OperatorDirectory;
  /** Default of `close --after`. */
  closeDelay: string;
  approvals: ReadonlySet<ApprovalAction>;
  approvalTtlMs: number;
}

/** Cross-field problems (a policy that needs identities none are configured for). */
export function safeOpsProblems(env: SafeOpsEnv): string[] {
  const wants = env.APPROVAL_POLICY && env.APPROVAL_POLICY.trim() !== 'none';
  return wants && !env.OPERATORS
    ? ['APPROVAL_POLICY: needs OPERATORS (a second operator can only be told apart by identity)']
    : [];
}

export function safeOpsOf(env: SafeOpsEnv): SafeOps {
  const parsed = env.OPERATORS ? parseOperatorList(env.OPERATORS) : undefined;
  const operators = createOperatorDirectory(parsed?.ok ? parsed.operators : []);
  const policy = env.APPROVAL_POLICY?.trim() ?? (env.OPERATORS ? APPROVAL_ACTIONS.join(',') : 'none');
  const approvals = new Set(policy === 'none' ? [] : policy.split(',').map((item) => item.trim() as ApprovalAction));
  return {
    operators,
    closeDelay: env.CLOSE_DELAY ?? (env.OPERATORS ? '30d' : '0'),
    approvals,
    approvalTtlMs: msOf(env.APPROVAL_TTL),
  };
}
