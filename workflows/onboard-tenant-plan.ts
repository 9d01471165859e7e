/**
 * The plan part of an onboarding by plan (issue 33), run once the tenant is active with its `default` key
 * and its funding (the plan's initialFundingMicroUsd, sent by the onboarding's own transfer loop):
 *
 *   issueTenantKey per other slot (child runs, side by side) ─► applyOnboardingPlan
 *     (rotation Schedule per slot, then in one transaction: auto top-up policy, the tenant's plan
 *      version and its tenant.plan_changed event)
 *
 * Each step is idempotent on its own: a slot's child run has the slot's one id (keyIssueWorkflowId) and
 * answers `existing` when the slot has its key; the schedules are made or updated; the transaction writes
 * nothing when the tenant is on the version already. So a retried onboarding does the plan once.
 */
import { executeChild, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { keyIssueWorkflowId } from '../src/domain/ids.js';
import { DEFAULT_SLOT } from '../src/domain/onboarding.js';
import type { ResolvedPlan } from '../src/domain/plans.js';
import { databaseStep } from './activity-policies.js';
import type { issueTenantKey } from './keys/issue-tenant-key.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

/** What the run did for its plan (in its result). */
export interface OnboardingPlanOutcome {
  name: string;
  version: number;
  /** The plan's slots besides `default` (the onboarding's own key), each with its key. */
  keys: Array<{ slot: string; keyId: string; fingerprint: string; outcome: 'issued' | 'existing' }>;
  schedules: string[];
  policySet: boolean;
}

/** The slots a plan adds to onboarding's own `default` key. */
export function extraSlotsOf(plan: ResolvedPlan): string[] {
  return [...new Set(plan.body.keySlots)].filter((slot) => slot !== DEFAULT_SLOT);
}

export async function carryOutPlan(externalRef: string, plan: ResolvedPlan): Promise<OnboardingPlanOutcome> {
  const keys = await Promise.all(
    extraSlotsOf(plan).map(async (slot) => {
      const issued = await executeChild<typeof issueTenantKey>('issueTenantKey', {
        workflowId: keyIssueWorkflowId(externalRef, slot),
        args: [{ externalRef, slot, operator: `plan:${plan.name}` }],
      });
      return { slot, keyId: issued.keyId, fingerprint: issued.fingerprint, outcome: issued.outcome };
    }),
  );
  const applied = await steps.applyOnboardingPlan({ externalRef, plan });
  return { name: plan.name, version: plan.version, keys, schedules: applied.schedules, policySet: applied.policySet };
}
