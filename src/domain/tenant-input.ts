import { z } from 'zod';
import { closeDelayProblem, CLOSE_DELAY_RULE, DURATION_PATTERN, msOf } from './durations.js';
import { durationSchema } from './duration-schema.js';
import { EXTERNAL_REF_MAX_LENGTH, TENANT_NAME_MAX_LENGTH } from './ids.js';
import { planSpecSchema } from './plan-ref.js';
import { freeText } from './text.js';
import { continuedSchema, waitBoundOptions } from './wait-options.js';
import { carriedFieldProblems, carriedFieldsOf } from './caller-fields.js';

/**
 * Inputs shared by every way in (helper, CLI, gateway, a Web-UI start): validated by the same
 * schema, so one bad value gives the same clear error everywhere. Workflows take its types only (zod stays out of their
 * bundle).
 */
export const EXTERNAL_REF_RULE =
  `1-${EXTERNAL_REF_MAX_LENGTH} characters of A-Z a-z 0-9 . _ : - starting with a ` + `letter or digit`;
export const externalRefSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(new RegExp(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,${EXTERNAL_REF_MAX_LENGTH - 1}}$`), `must be ${EXTERNAL_REF_RULE}`);

// Control and format characters make names that look equal but are not (the shared rule refuses them).
export const tenantNameSchema = freeText({ max: TENANT_NAME_MAX_LENGTH, trim: false });

const MICRO_USD_RULE = 'a string of a positive whole number of micro-USD (e.g. "5000000" for 5 USD), at most 30 digits';
export const microUsdSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : `must be ${MICRO_USD_RULE}`) })
  .regex(/^[1-9][0-9]{0,29}$/, `must be ${MICRO_USD_RULE}`);

export const slotSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'must be 1-32 characters of a-z 0-9 - starting with a letter or digit');

export { durationSchema };
// Intervals and deadlines here are waits: zero would spin.
// zod runs the refinement even when the pattern failed: a malformed value must not throw here (it is reported already).
const duration = durationSchema.refine(
  (value) => (typeof value === 'number' ? value > 0 : !DURATION_PATTERN.test(value) || msOf(value) > 0),
  'must be longer than zero',
);

export const PLAN_WITH_FUNDING_RULE =
  "must be absent when plan is given (the plan's initialFundingMicroUsd is the initial funding)";

export const onboardTenantInputSchema = z
  .strictObject({
    externalRef: externalRefSchema,
    name: tenantNameSchema,
    fundingMicroUsd: microUsdSchema.optional(),
    /**
     * A plan (`starter`, or `starter@2` for one version; docs/plans.md): the run does all it says. Absent
     * version: the latest when the run starts, pinned then. Never together with fundingMicroUsd.
     */
    plan: planSpecSchema.optional(),
    /** Timings, so tests and operators can use seconds. */
    options: z
      .strictObject({
        /** How often to retry a transfer refused for INSUFFICIENT_BALANCE when no parentFunded signal comes. */
        balanceRetryInterval: duration.optional(),
        /** How long an ambiguous transfer may stay unknown before an operator is asked. */
        unknownTransferDeadline: duration.optional(),
        /** How often an unknown transfer is reconciled. */
        reconcileInterval: duration.optional(),
        ...waitBoundOptions,
      })
      .optional(),
    /** The state an onboarding that continued as new hands to its next run (workflows/onboard-tenant.ts). */
    continued: continuedSchema,
  })
  .superRefine((input, ctx) => {
    if (input.plan !== undefined && input.fundingMicroUsd !== undefined)
      ctx.addIssue({ code: 'custom', path: ['fundingMicroUsd'], message: PLAN_WITH_FUNDING_RULE });
  });

export type OnboardTenantInput = z.infer<typeof onboardTenantInputSchema>;

const reasonSchema = freeText({ min: 3, max: 500, multiline: true, required: 'is required: say why (it is recorded)' });
const operatorSchema = z
  .string()
  .regex(/^[A-Za-z0-9._@:-]{1,100}$/, 'must be 1-100 characters of A-Z a-z 0-9 . _ @ : -');

/** suspendTenant / resumeTenant / closeTenant: who asks and why, always recorded. */
export const lifecycleInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  reason: reasonSchema,
  operator: operatorSchema.default('unknown'),
  /** close only: suspend now, close after this (`0`: at once, as before). Absent: at once. */
  after: z
    .string({ error: () => `must be ${CLOSE_DELAY_RULE}` })
    .refine((value) => closeDelayProblem(value) === null, `must be ${CLOSE_DELAY_RULE}`)
    .optional(),
  options: z
    .strictObject({
      /** How often a close re-lists projects and keys while cleaning up. */
      pollInterval: duration.optional(),
      /** How long a close may wait for an unknown transfer before asking an operator. */
      unknownTransferDeadline: duration.optional(),
      ...waitBoundOptions,
    })
    .optional(),
  /** close only: the state a close that continued as new hands to its next run (workflows/close-tenant.ts). */
  continued: continuedSchema,
  /**
   * close only: the server's word that an admin closes sooner than the minimum (src/secrets/close-sooner-grant.ts),
   * sealed by startLifecycle and opened by the run's input check; never a caller's.
   */
  closeSooner: z.string().max(1000).optional(),
});
export type LifecycleWorkflowInput = z.input<typeof lifecycleInputSchema>;
export type LifecycleRequest = z.output<typeof lifecycleInputSchema>;

/** Only a close takes a delay: the rule of `after` on suspend and resume, the starters' and the runs' own. */
export function lifecycleAfterProblem(action: 'suspend' | 'resume' | 'close', after: unknown): string | null {
  return action !== 'close' && after !== undefined ? `after: only a close takes a delay (not ${action})` : null;
}

export class InvalidInputError extends Error {
  override name = 'InvalidInputError';
  constructor(readonly problems: string[]) {
    super(`invalid input: ${problems.join('; ')}`);
  }
}

/**
 * A workflow input from a caller (gateway, tenantctl, a schedule, a start in the Web UI through the client
 * starters): parsed like any input, and `continued` — the state a run hands to its next run when it
 * continues as new — is refused, naming the field, before anything starts (it would skip the run's own
 * checks; the workflow refuses it too, but a started run bound to fail is not an answer). So are the other
 * carried fields the caller names (a fleet run's `after` and `totals`).
 */
export function parseCallerInput<T>(
  schema: z.ZodType<T>,
  value: unknown,
  /** The input's carried fields (src/domain/caller-fields.ts): a fleet run's cursor and totals too. */
  carried: readonly string[] = carriedFieldsOf(''),
): T {
  const problems = carriedFieldProblems(carried, value);
  if (problems.length) throw new InvalidInputError(problems);
  return parseInput(schema, value);
}

/** Validates, listing every problem as `field: rule` (values are not echoed). */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InvalidInputError(
    parsed.error.issues.flatMap((issue) => {
      const field = issue.path.join('.') || 'input';
      // One problem per unknown field, named by its own path, so callers (the gateway's `fields`) can point at it.
      if (issue.code === 'unrecognized_keys')
        return issue.keys.map((key) => `${[...issue.path, key].join('.')}: is not a known field`);
      if (issue.code === 'invalid_type' && issue.path.length === 0) return ['input: must be a JSON object'];
      return [`${field}: ${issue.message}`];
    }),
  );
}
