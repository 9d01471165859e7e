import { z } from 'zod';
import { closeDelayProblem, CLOSE_DELAY_RULE, msOf } from './durations.js';
import { autoTopUpPolicySchema } from './funding-policy-input.js';
import { namedSlotSchema } from './key-slot-input.js';
import { deployerSpecSchema, rotationTimingsSchema } from './rotation-input.js';
import { DEFAULT_SLOT } from './onboarding.js';
import { InvalidInputError, microUsdSchema } from './tenant-input.js';
import { topUpReasonSchema } from './top-up-input.js';
import {
  PLAN_NAME_MAX_LENGTH,
  PLAN_NAME_RULE,
  planNameSchema,
  PLAN_VERSION_RULE,
  planVersionSchema,
  type PlanRef,
} from './plan-ref.js';

export type { PlanRef };

/**
 * A plan: what a tenant on it gets (initial funding, the key slots issued at onboarding, rotation, auto
 * top-up, the resume floor, the close delay), under a name and a version. Versions are immutable: an
 * update is the next version with the whole new body. Every field is checked by the rule the same value
 * has elsewhere (top-up amounts, slot names, rotation timings and deployers, funding policies, close
 * delays), so a plan can never hold what the single-tenant commands would refuse. Absent optional fields:
 * the plan says nothing about them (no funding at onboarding, no schedule, no policy, the server's setting).
 */
export { PLAN_NAME_MAX_LENGTH, PLAN_NAME_RULE, planNameSchema, PLAN_VERSION_RULE, planVersionSchema };

/** Which version to read: a name (a path segment) and, optionally, a version (absent: the latest). */
export const planLookupSchema = z.strictObject({ name: planNameSchema, version: planVersionSchema.optional() });

/**
 * How often a Schedule rotates: the form the rotation schedules take (`SCHEDULE_EVERY` in
 * src/client/schedule-every.ts, which the domain may not import; a unit test keeps the two equal).
 */
export const ROTATION_INTERVAL_PATTERN = /^\d+(s|m|h|d)$/;
const ROTATION_INTERVAL_RULE = 'a duration like 12h or 30d, longer than zero';
const rotationIntervalSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : `must be ${ROTATION_INTERVAL_RULE}`) })
  .refine((value) => ROTATION_INTERVAL_PATTERN.test(value) && msOf(value) > 0, `must be ${ROTATION_INTERVAL_RULE}`);

export const planRotationSchema = rotationTimingsSchema.pick({ quietPeriod: true, overlapWindow: true }).extend({
  interval: rotationIntervalSchema,
  /** Absent: the worker's configured deployer (ROTATION_DEPLOYER), as for a one-off rotation. */
  deployer: deployerSpecSchema.optional(),
});

const MAX_PLAN_SLOTS = 32;
const keySlotsSchema = z
  .array(namedSlotSchema, { error: (issue) => (issue.input === undefined ? 'is required' : 'must be a list of slots') })
  .min(1, 'must name at least one slot (onboarding issues a key in each)')
  .max(MAX_PLAN_SLOTS, `must name at most ${MAX_PLAN_SLOTS} slots`)
  .superRefine((slots, ctx) => {
    if (new Set(slots).size !== slots.length) ctx.addIssue({ code: 'custom', message: 'must not repeat a slot' });
  });

export const BALANCE_FLOOR_RULE =
  'a string of a whole number of micro-USD, 0 or more (e.g. "1000000"), at most 30 digits';
const balanceFloorSchema = z
  .string({ error: `must be ${BALANCE_FLOOR_RULE}` })
  .regex(/^(0|[1-9][0-9]{0,29})$/, `must be ${BALANCE_FLOOR_RULE}`);

const closeDelaySchema = z
  .string({ error: `must be ${CLOSE_DELAY_RULE}` })
  .refine((value) => closeDelayProblem(value) === null, `must be ${CLOSE_DELAY_RULE}`);

/** The body of a plan version: what is stored (jsonb) and what `--file` holds. */
export const planBodySchema = z.strictObject({
  /** Sent once at onboarding, as a top-up is (TRANSFER_MAX_MICRO_USD holds). */
  initialFundingMicroUsd: microUsdSchema.optional(),
  /**
   * Sent once to each tenant moved onto this version from another (a rollout or an assignment), under the
   * transfer machinery with one caller key per tenant and version; not at onboarding.
   */
  upgradeFundingMicroUsd: microUsdSchema.optional(),
  /** A key is issued in each at onboarding. */
  keySlots: keySlotsSchema,
  /** A rotation schedule for each slot. */
  rotation: planRotationSchema.optional(),
  /** The tenant's auto top-up policy and caps. */
  autoTopUp: autoTopUpPolicySchema.optional(),
  /** `resume` refuses a tenant below this (RESUME_BALANCE_FLOOR_MICRO_USD for tenants on no plan). */
  resumeBalanceFloorMicroUsd: balanceFloorSchema.optional(),
  /** How long a close waits after suspending (CLOSE_DELAY for tenants on no plan). */
  closeDelay: closeDelaySchema.optional(),
});
export type PlanBody = z.output<typeof planBodySchema>;

/** Why a version was made (audited); optional. */
const planReasonSchema = topUpReasonSchema.optional();

/** `POST /v1/plans`: a new plan, version 1. */
export const createPlanInputSchema = planBodySchema.extend({ name: planNameSchema, reason: planReasonSchema });
export type CreatePlanInput = z.input<typeof createPlanInputSchema>;

/** `POST /v1/plans/:name/versions`: the next version, with the whole new body. */
export const updatePlanInputSchema = planBodySchema.extend({
  /** Refuse unless the latest version is this one (someone else updated meanwhile). */
  expectVersion: planVersionSchema.optional(),
  reason: planReasonSchema,
});
export type UpdatePlanInput = z.input<typeof updatePlanInputSchema>;

/** A plan version an onboarding carries out: its name, its version and its body as the schema parses it. */
export interface ResolvedPlan extends PlanRef {
  body: PlanBody;
}

/** The slots a tenant on a plan version has keys in: onboarding's own `default` and each of the plan's. */
export function planSlotsOf(body: Pick<PlanBody, 'keySlots'>): string[] {
  return [...new Set([DEFAULT_SLOT, ...body.keySlots])];
}

/** The platform's cap on a tenant's active keys, which the contract does not show: the operator sets it. */
export const TENANT_KEY_LIMIT_SETTING = 'PLATFORM_TENANT_KEY_LIMIT';

/**
 * The rule, once: a plan's slots (with `default`) leave one key of room under the platform's cap on a
 * tenant's active keys, so that a rotation's new key fits beside the old one during its overlap. A plan
 * over it would have its onboarding or rollout wait at API_KEY_LIMIT_REACHED for ever, so it is refused
 * where a plan is written and again where one is carried out (a plan made under a higher limit).
 * `keySlots: …` for a plan over the limit, else null; `of`: the version carried out (the problem then
 * names `plan`, the field of the request that carries it out).
 */
export function planKeySlotsProblem(
  body: Pick<PlanBody, 'keySlots'>,
  tenantKeyLimit: number,
  of?: PlanRef,
): string | null {
  const most = tenantKeyLimit - 1;
  const slots = planSlotsOf(body).length;
  if (slots <= most) return null;
  const rule =
    `keySlots: a plan may have at most ${most} slot${most === 1 ? '' : 's'} with default ` +
    `(${TENANT_KEY_LIMIT_SETTING} ${tenantKeyLimit}, one key kept free for a rotation's new key), this one has ` +
    `${slots}`;
  return of ? `plan: ${of.name}@${of.version}'s ${rule}` : rule;
}

/** Throws InvalidInputError (the edges' 400 INVALID_INPUT) for a plan over the limit. */
export function assertPlanWithinKeyLimit(body: Pick<PlanBody, 'keySlots'>, tenantKeyLimit: number, of?: PlanRef): void {
  const problem = planKeySlotsProblem(body, tenantKeyLimit, of);
  if (problem) throw new InvalidInputError([problem]);
}
