import { z } from 'zod';

/**
 * A plan's name and version rules, and the `plan` an onboarding names (`starter` or `starter@2`). Apart from
 * src/domain/plans.ts so that the onboarding input (tenant-input.ts, which plans.ts imports) can use them.
 */
export const PLAN_NAME_MAX_LENGTH = 64;
export const PLAN_NAME_RULE =
  `1-${PLAN_NAME_MAX_LENGTH} characters of A-Z a-z 0-9 . _ : - starting with a letter ` + `or digit`;
const PLAN_NAME_PATTERN = `[A-Za-z0-9][A-Za-z0-9._:-]{0,${PLAN_NAME_MAX_LENGTH - 1}}`;
export const planNameSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(new RegExp(`^${PLAN_NAME_PATTERN}$`), `must be ${PLAN_NAME_RULE}`);

export const PLAN_VERSION_RULE = 'a whole number from 1 (1, 2, …)';
export const PLAN_VERSION_MAX = 2_147_483_647; // Postgres integer
/** A version as JSON (a number) or as text (a query parameter, a flag). */
export const planVersionSchema = z
  .union([z.number(), z.string()], { error: `must be ${PLAN_VERSION_RULE}` })
  .transform((value, ctx) => {
    const version = typeof value === 'number' ? value : /^[1-9][0-9]{0,9}$/.test(value) ? Number(value) : NaN;
    if (Number.isInteger(version) && version >= 1 && version <= PLAN_VERSION_MAX) return version;
    ctx.addIssue({ code: 'custom', message: `must be ${PLAN_VERSION_RULE}` });
    return z.NEVER;
  });

/** A plan version as a tenant records it and `tenant.plan_changed` names it. */
export interface PlanRef {
  name: string;
  version: number;
}

export const PLAN_SPEC_RULE = `a plan name (${PLAN_NAME_RULE}), optionally with @version (e.g. starter or starter@2)`;

/** `starter` → { name: 'starter' }; `starter@2` → { name: 'starter', version: 2 }; undefined when malformed. */
export function planSpecOf(text: string): { name: string; version?: number } | undefined {
  const match = new RegExp(`^(${PLAN_NAME_PATTERN})(?:@([1-9][0-9]{0,9}))?$`).exec(text);
  if (!match) return undefined;
  if (match[2] === undefined) return { name: match[1]! };
  const version = Number(match[2]);
  return version <= PLAN_VERSION_MAX ? { name: match[1]!, version } : undefined;
}

/** The text form of a pinned version, as a run's input carries it. */
export function planSpecText(plan: PlanRef): string {
  return `${plan.name}@${plan.version}`;
}

/** `plan` of an onboarding: kept as text (the workflow's input stays as given), checked here. */
export const planSpecSchema = z
  .string({ error: `must be ${PLAN_SPEC_RULE}` })
  .refine((value) => planSpecOf(value) !== undefined, `must be ${PLAN_SPEC_RULE}`);
