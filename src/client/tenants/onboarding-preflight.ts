import type { Client } from '@temporalio/client';
import { runOnboardingChecks, type PreflightCheck } from '../../../activities/onboarding-preflight.js';
import type { Pool } from '../../db/pool.js';
import { onboardingWorkflowId } from '../../domain/ids.js';
import { DEFAULT_SLOT, INITIAL_TRANSFER } from '../../domain/onboarding.js';
import { onboardTenantInputSchema, parseCallerInput } from '../../domain/tenant-input.js';
import { assertWithinTransferLimit } from '../../domain/transfer-limit.js';
import type { PlatformClient } from '../../platform/index.js';
import { resolvePlan, type PlanLimits, type ResolvedPlan } from '../../db/plans-store.js';

export interface OnboardingDryRun {
  dryRun: true;
  /** Every check passed: the onboarding would start. */
  ok: boolean;
  checks: PreflightCheck[];
  plan: string[];
}

/**
 * `tenantctl onboard --dry-run` and `POST /v1/tenants?dryRun=true`: the input (a bad one throws
 * InvalidInputError, one line per problem, as a real start would), the external ref free (no record,
 * no onboarding run), the parent's balance, the platform answering (one GET), and the plan. It
 * writes nothing, starts nothing and makes no mutating platform call.
 */
export async function dryRunOnboarding(
  deps: { pool: Pool; client: Client; platform: PlatformClient },
  rawInput: unknown,
  options: PlanLimits = {},
): Promise<OnboardingDryRun> {
  const input = parseCallerInput(onboardTenantInputSchema, rawInput);
  assertWithinTransferLimit({ fundingMicroUsd: input.fundingMicroUsd }, options.maxTransferMicroUsd);
  const planned = input.plan === undefined ? undefined : await resolvePlan(deps.pool, input.plan, options);
  const funding = planned ? planned.body.initialFundingMicroUsd : input.fundingMicroUsd;
  const checks = await runOnboardingChecks(deps, input, { ownRecordResumes: false });
  const workflowId = onboardingWorkflowId(input.externalRef);
  const run = await deps.client.workflow
    .getHandle(workflowId)
    .describe()
    .catch(() => undefined);
  if (run) {
    const ref = checks.find((c) => c.check === 'externalRef')!;
    Object.assign(ref, { ok: false, detail: `${ref.detail}; ${workflowId} exists (${run.status.name})` });
  }
  const plan = [
    `start ${workflowId}`,
    `record ownership of ${input.externalRef} ("${input.name}")`,
    'create the sub-account under an idempotency key derived from the external ref',
    ...(funding
      ? [`fund its wallet with ${funding} micro-USD (transfer "${INITIAL_TRANSFER}" ` + `written first)`]
      : ['no funding']),
    `issue its first key (slot ${DEFAULT_SLOT}; token sealed at once) and verify it`,
    'mark the tenant active',
    ...(planned ? planSteps(planned) : []),
  ];
  return { dryRun: true, ok: checks.every((c) => c.ok), checks, plan };
}

/** What an onboarding by plan does after the tenant is active (workflows/onboard-tenant-plan.ts). */
function planSteps(plan: ResolvedPlan): string[] {
  const { body } = plan;
  const slots = body.keySlots.filter((slot) => slot !== DEFAULT_SLOT);
  const scheduled = [...new Set([DEFAULT_SLOT, ...body.keySlots])];
  return [
    ...(slots.length ? [`issue a key in each of the plan's slots (${slots.join(', ')})`] : []),
    ...(body.autoTopUp ? [`set the auto top-up policy (below ${body.autoTopUp.below}, to ${body.autoTopUp.to})`] : []),
    ...(body.rotation ? [`schedule rotation every ${body.rotation.interval} for ${scheduled.join(', ')}`] : []),
    `record plan ${plan.name}@${plan.version} (event tenant.plan_changed)`,
  ];
}
