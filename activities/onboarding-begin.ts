import { onboardingWorkflowId, workflowIdProblem } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { InvalidInputError, type OnboardTenantInput } from '../src/domain/tenant-input.js';
import type { ResolvedPlan } from '../src/domain/plans.js';
import { auditOrigin } from './context.js';
import { boundary } from './failures.js';
import type { createInputValidationActivities } from './input-validation.js';
import type { createTenantActivities, EnsureSubaccountStepResult } from './tenants.js';

export interface BeginOnboardingResult {
  /** The input as the schema parsed it. */
  input: OnboardTenantInput;
  /** The sub-account step's answer, as ensureSubaccountStep gives it (a lookup may still be needed). */
  step: EnsureSubaccountStepResult;
  /**
   * The plan the input names, resolved once here (absent version: the latest now) and so pinned in the
   * run's history; null without `plan`. Absent in histories recorded before onboarding by plan.
   */
  plan?: ResolvedPlan | null;
}

/**
 * onboardTenant's first step: its input checked as
 * validateWorkflowInput checks it (schema, the run's workflow id, the preflight against our records),
 * then the sub-account step, in one local activity instead of two. A refused input throws
 * INVALID_INPUT or PREFLIGHT_FAILED before anything is written; a retry repeats the checks, and the
 * sub-account step is idempotent on its own.
 */
export function createBeginOnboardingActivity(
  validation: ReturnType<typeof createInputValidationActivities>,
  tenants: Pick<ReturnType<typeof createTenantActivities>, 'ensureSubaccountStep'>,
  resolvePlan?: (spec: string) => Promise<ResolvedPlan>,
) {
  // An unknown plan or version refuses the input as the schema would: before anything is written.
  async function planOf(spec: string, workflowType: string): Promise<ResolvedPlan> {
    if (!resolvePlan) throw codedFailure(FailureCode.INVALID_INPUT, 'plan: this worker cannot read plans');
    try {
      return await resolvePlan(spec);
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      throw codedFailure(FailureCode.INVALID_INPUT, `invalid ${workflowType} input: ${error.problems.join('; ')}`, {
        details: { problems: error.problems },
      });
    }
  }

  return {
    beginOnboarding: boundary(
      async (request: { input: unknown; workflowType: string }): Promise<BeginOnboardingResult> => {
        const input = await validation.validateWorkflowInput({
          schema: 'onboardTenant',
          input: request.input,
          workflowType: request.workflowType,
        });
        const actual = auditOrigin().workflowId;
        const problem = actual === null ? null : workflowIdProblem(onboardingWorkflowId(input.externalRef), actual);
        if (problem) throw codedFailure(FailureCode.INVALID_INPUT, problem);
        const plan = input.plan === undefined ? null : await planOf(input.plan, request.workflowType);
        const step = await tenants.ensureSubaccountStep({ externalRef: input.externalRef, name: input.name });
        return { input, step, plan };
      },
    ),
  };
}
