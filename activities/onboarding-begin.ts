import { onboardingWorkflowId, workflowIdProblem } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import type { OnboardTenantInput } from '../src/domain/tenant-input.js';
import { auditOrigin } from './context.js';
import { boundary } from './failures.js';
import type { createInputValidationActivities } from './input-validation.js';
import type { createTenantActivities, EnsureSubaccountStepResult } from './tenants.js';

export interface BeginOnboardingResult {
  /** The input as the schema parsed it. */
  input: OnboardTenantInput;
  /** The sub-account step's answer, as ensureSubaccountStep gives it (a lookup may still be needed). */
  step: EnsureSubaccountStepResult;
}

/**
 * onboardTenant's first step since onboarding-patches-decided-at-start: its input checked as
 * validateWorkflowInput checks it (schema, the run's workflow id, the preflight against our records),
 * then the sub-account step, in one local activity instead of two. A refused input throws
 * INVALID_INPUT or PREFLIGHT_FAILED before anything is written; a retry repeats the checks, and the
 * sub-account step is idempotent on its own.
 */
export function createBeginOnboardingActivity(
  validation: ReturnType<typeof createInputValidationActivities>,
  tenants: Pick<ReturnType<typeof createTenantActivities>, 'ensureSubaccountStep'>,
) {
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
        const step = await tenants.ensureSubaccountStep({ externalRef: input.externalRef, name: input.name });
        return { input, step };
      },
    ),
  };
}
