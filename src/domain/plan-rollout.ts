import { z } from 'zod';
import { OPERATOR_MAX, OPERATOR_RULE, REASON_TEXT } from './operator-decisions.js';
import { planNameSchema, planVersionSchema, type PlanRef } from './plan-ref.js';
import { planSlotsOf, type PlanBody } from './plans.js';
import { durationSchema, externalRefSchema } from './tenant-input.js';
import { freeText } from './text.js';
import { continuedSchema } from './wait-options.js';

export { planFundingKey, ROLLOUT_BUDGET_SHARE } from './plan-ids.js';
/**
 * Converging tenants onto a plan version (issue 33): what changes for one tenant (a pure function of its
 * records and the two plan versions, shared by the dry run, the drift check and the run that carries it
 * out), and the inputs of the per-tenant run (convergeTenantPlan) and of the paced fleet run (rolloutPlan).
 *
 * A plan only takes back what a plan gave: a slot is retired only when the version the tenant was on
 * declared it and the new one does not; a schedule is removed only for such a slot (or every plan slot when
 * the new version drops rotation); a policy is removed only when it is still the one the old version set.
 * Keys, schedules and policies an operator made by hand are left alone.
 */

// planSlotsOf lives with the plan's key limit rule, which counts slots the same way.
export { planSlotsOf };

export interface PolicyFields {
  below: string;
  to: string;
  maxPerDay: string;
  maxPerMonth: string | null;
}

/** What our records say of a tenant, for the comparison. */
export interface TenantPlanState {
  /** The version it is on (null: none). */
  from: PlanRef | null;
  /** That version's body (null: on no plan). */
  fromBody: PlanBody | null;
  /** Slots with an active key. */
  activeSlots: string[];
  /** Its auto top-up policy (null: none). */
  policy: PolicyFields | null;
}

/** What converging one tenant onto a version does, in the order the run does it. */
export interface PlanChanges {
  /** Keys revoked through the quiet gate (slots the old version declared, the new one does not). */
  slotsRetired: string[];
  /** Keys issued (the new version's slots with no active key). */
  slotsAdded: string[];
  /** The new version's upgrade funding, sent once per tenant and version (null: none). */
  fundingMicroUsd: string | null;
  /** Rotation schedules made or brought up to date. */
  schedulesSet: string[];
  /** Plan-made rotation schedules deleted. */
  schedulesRemoved: string[];
  /** The auto top-up policy. */
  policy: 'set' | 'removed' | 'unchanged';
}

function policyOf(body: PlanBody | null): PolicyFields | null {
  const policy = body?.autoTopUp;
  return policy
    ? { below: policy.below, to: policy.to, maxPerDay: policy.maxPerDay, maxPerMonth: policy.maxPerMonth ?? null }
    : null;
}

export function samePolicy(a: PolicyFields | null, b: PolicyFields | null): boolean {
  if (a === null || b === null) return a === b;
  return a.below === b.below && a.to === b.to && a.maxPerDay === b.maxPerDay && a.maxPerMonth === b.maxPerMonth;
}

function sameRotation(a: PlanBody['rotation'], b: PlanBody['rotation']): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function samePlanRef(a: PlanRef | null, b: PlanRef): boolean {
  return a !== null && a.name === b.name && a.version === b.version;
}

/** What moving a tenant in `state` onto version `to` (with body `toBody`) changes. */
export function planChanges(state: TenantPlanState, to: PlanRef, toBody: PlanBody): PlanChanges {
  const active = new Set(state.activeSlots);
  const toSlots = planSlotsOf(toBody);
  const fromSlots = state.fromBody ? planSlotsOf(state.fromBody) : [];
  const dropped = fromSlots.filter((slot) => !toSlots.includes(slot));
  const slotsRetired = dropped.filter((slot) => active.has(slot));
  const slotsAdded = toSlots.filter((slot) => !active.has(slot));

  let schedulesSet: string[] = [];
  if (toBody.rotation) {
    const rotationChanged = state.fromBody === null || !sameRotation(state.fromBody.rotation, toBody.rotation);
    schedulesSet = rotationChanged ? toSlots : toSlots.filter((slot) => !fromSlots.includes(slot));
  }
  const schedulesRemoved = state.fromBody?.rotation ? (toBody.rotation ? dropped : fromSlots) : [];

  const wanted = policyOf(toBody);
  const planned = policyOf(state.fromBody);
  let policy: PlanChanges['policy'] = 'unchanged';
  if (wanted !== null && !samePolicy(state.policy, wanted)) policy = 'set';
  // Taken back only while it is still the one the old version set: an operator's own policy stays.
  if (wanted === null && planned !== null && samePolicy(state.policy, planned)) policy = 'removed';

  const fundingMicroUsd = samePlanRef(state.from, to) ? null : (toBody.upgradeFundingMicroUsd ?? null);
  return { slotsRetired, slotsAdded, fundingMicroUsd, schedulesSet, schedulesRemoved, policy };
}

/**
 * Platform requests a convergence makes, as the simulator counts them: a key issued is its create and the
 * verification read; a retired key at least one usage read and its revoke; the upgrade funding its transfer and
 * the wallet read after it. Schedules and policies are Temporal and our records: no platform request.
 */
export const PLATFORM_CALLS = { keyIssued: 2, keyRetired: 2, funding: 2 } as const;

export function platformCallsOf(changes: PlanChanges): number {
  return (
    changes.slotsAdded.length * PLATFORM_CALLS.keyIssued +
    changes.slotsRetired.length * PLATFORM_CALLS.keyRetired +
    (changes.fundingMicroUsd === null ? 0 : PLATFORM_CALLS.funding)
  );
}

/** Nothing to do but (perhaps) record the version. */
export function noChanges(changes: PlanChanges): boolean {
  return (
    changes.slotsRetired.length === 0 &&
    changes.slotsAdded.length === 0 &&
    changes.fundingMicroUsd === null &&
    changes.schedulesSet.length === 0 &&
    changes.schedulesRemoved.length === 0 &&
    changes.policy === 'unchanged'
  );
}

const operatorSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .regex(new RegExp(`^[A-Za-z0-9._@:-]{1,${OPERATOR_MAX}}$`), `must be ${OPERATOR_RULE}`);

/** How a retired slot's key is revoked: the quiet gate's timings (as `key revoke` takes them). */
export const convergeOptionsSchema = z.strictObject({
  quietPeriod: durationSchema.optional(),
  pollInterval: durationSchema.optional(),
  quietDeadline: durationSchema.optional(),
  overlapWindow: durationSchema.optional(),
});

/** convergeTenantPlan's input: one tenant onto one pinned version. */
export const convergeTenantPlanInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  plan: planNameSchema,
  version: planVersionSchema,
  /** Who asked (audited): the authenticated identity, or the rollout's. */
  requestedBy: operatorSchema,
  reason: freeText(REASON_TEXT).optional(),
  options: convergeOptionsSchema.optional(),
});
export type ConvergeTenantPlanInput = z.input<typeof convergeTenantPlanInputSchema>;

export const ROLLOUT_CONCURRENCY_MAX = 200;
export const ROLLOUT_PAGE_MAX = 1000;

/** rolloutPlan's input: every active tenant on `from` (default: the plan itself) not yet on the version. */
export const rolloutPlanInputSchema = z.strictObject({
  plan: planNameSchema,
  version: planVersionSchema,
  /** The tenants on this plan are moved (default: the plan's own tenants, onto its new version). */
  from: planNameSchema.optional(),
  /** Tenants converging at once; the platform rate limit (task queue) paces their calls beneath. */
  concurrency: z.number().int().min(1).max(ROLLOUT_CONCURRENCY_MAX).default(10),
  /** Tenants read per page; the run continues as new after each page. */
  pageSize: z.number().int().min(1).max(ROLLOUT_PAGE_MAX).default(200),
  /**
   * The platform requests per second the rollout bounds its tenants in flight by (absent: the worker's
   * PLATFORM_RATE_LIMIT_PER_SECOND): at most ROLLOUT_BUDGET_SHARE of it.
   */
  platformRequestsPerSecond: z.number().positive().max(10_000).optional(),
  requestedBy: operatorSchema,
  reason: freeText(REASON_TEXT).optional(),
  options: convergeOptionsSchema.optional(),
  /** Carried across continue-as-new: resume after this external ref. */
  after: z.string().nullable().default(null),
  /** The run's own state (totals, samples, pause), handed to its next run. */
  continued: continuedSchema,
});
export type RolloutPlanInput = z.input<typeof rolloutPlanInputSchema>;

/**
 * `POST /v1/plans/:name/rollouts`'s body: what a caller sets of a rollout (the version, absent: the latest; whose
 * tenants; the pace; why; the quiet gate's timings of the keys it retires), each by the run's own rule. The route
 * documents and reads exactly these fields, and `tenantctl plans rollout` has a flag for each, named after it
 * (test/unit/plan-rollout-cli.test.ts), so the two cannot drift.
 */
export const rolloutStartBodySchema = rolloutPlanInputSchema
  .pick({ from: true, concurrency: true, pageSize: true, reason: true, options: true })
  .extend({ version: planVersionSchema.optional() });
export const ROLLOUT_START_FIELDS = Object.keys(rolloutStartBodySchema.shape) as ReadonlyArray<
  keyof typeof rolloutStartBodySchema.shape
>;
