import type { Pool } from '../src/db/pool.js';
import { getFundingParent } from '../src/db/funding-store.js';
import { findTenant } from '../src/db/tenants-store.js';
import type { OnboardTenantInput } from '../src/domain/tenant-input.js';
import { FailureCode } from '../src/domain/failures.js';
import { PlatformError, type PlatformClient } from '../src/platform/index.js';
import type { ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';

/**
 * The checks an onboarding can pass before anything is created: the external ref is free, the
 * parent's paid balance covers the funding, the platform answers. Read-only: one GET on the
 * platform, reads of our records. `tenantctl onboard --dry-run` and `POST /v1/tenants?dryRun=true`
 * run them and print the plan; the onboarding runs them first (a run that resumes its own record
 * counts the ref as its own).
 */
export interface PreflightCheck {
  check: 'externalRef' | 'parentBalance' | 'platform';
  ok: boolean;
  detail: string;
  /** A failure that may pass on its own (the platform did not answer for now). */
  transient?: boolean;
}

const RESUMABLE = ['creating', 'created', 'failed', 'cancelled'];

export async function runOnboardingChecks(
  deps: { pool: Pool; platform: PlatformClient },
  input: Pick<OnboardTenantInput, 'externalRef' | 'name' | 'fundingMicroUsd'>,
  options: { ownRecordResumes: boolean },
): Promise<PreflightCheck[]> {
  const checks: PreflightCheck[] = [];
  const tenant = await findTenant(deps.pool, input.externalRef);
  if (!tenant) checks.push({ check: 'externalRef', ok: true, detail: 'free: no record holds it' });
  else if (options.ownRecordResumes && tenant.name === input.name && RESUMABLE.includes(tenant.status))
    checks.push({
      check: 'externalRef',
      ok: true,
      detail: `recorded by an earlier attempt (${tenant.status}): resumes`,
    });
  else if (options.ownRecordResumes)
    // Inside the run: the onboarding's own steps answer a recorded ref (idempotent replay or EXTERNAL_REF_CONFLICT).
    return [{ check: 'externalRef', ok: true, detail: `recorded (${tenant.status}): the onboarding's steps decide` }];
  else
    checks.push({
      check: 'externalRef',
      ok: false,
      detail: `already recorded (${tenant.status}${tenant.name === input.name ? '' : ', another name'})`,
    });

  if (!input.fundingMicroUsd) checks.push({ check: 'parentBalance', ok: true, detail: 'no funding asked' });
  else {
    // The contract shows no endpoint for the parent's own balance: the best evidence is whether the
    // platform last refused a transfer for INSUFFICIENT_BALANCE (cleared by `tenantctl parent-funded`).
    const parent = await getFundingParent(deps.pool);
    checks.push(
      parent.insufficientSince
        ? {
            check: 'parentBalance',
            ok: false,
            detail: `the platform refused a transfer for INSUFFICIENT_BALANCE at ${new Date(parent.insufficientSince).toISOString()}: fund the parent, then \`tenantctl parent-funded --reason "..."\``,
          }
        : {
            check: 'parentBalance',
            ok: true,
            detail: `no insufficient-balance state recorded (the platform shows no parent balance to compare ${input.fundingMicroUsd} micro-USD with)`,
          },
    );
  }

  try {
    const page = await deps.platform.listSubaccountsPage({});
    checks.push({ check: 'platform', ok: true, detail: `answered (request ${page.requestId ?? 'without id'})` });
  } catch (error) {
    // A definite refusal (401/403: a wrong platform key, say) cannot pass; a transient one may.
    const transient = !(error instanceof PlatformError) || error.retryable;
    checks.push({
      check: 'platform',
      ok: false,
      detail: `did not answer${transient ? ' (transient)' : ''}: ${(error as Error).message}`,
      ...(transient ? { transient: true } : {}),
    });
  }
  return checks;
}

export function createOnboardingPreflightActivities(deps: ActivityDeps) {
  return {
    /** The onboarding's first step: fails PREFLIGHT_FAILED before anything is created when a check cannot pass. */
    preflightOnboarding: boundary(
      async (input: { externalRef: string; name: string; fundingMicroUsd?: string }): Promise<PreflightCheck[]> => {
        // Only a fresh onboarding is checked: one that resumes its own record has created things already.
        if (await findTenant(deps.pool, input.externalRef))
          return [{ check: 'externalRef', ok: true, detail: 'recorded: resumes from our records' }];
        const checks = await runOnboardingChecks(deps, input, { ownRecordResumes: true });
        // A platform that does not answer for now is no reason to fail: the steps retry under
        // their idempotency keys, as before. Only what cannot pass stops the run.
        const failed = checks.filter((c) => !c.ok && !c.transient);
        if (failed.length === 0) return checks;
        throw activityFailure(
          FailureCode.PREFLIGHT_FAILED,
          `onboarding preflight: ${failed.map((c) => `${c.check}: ${c.detail}`).join('; ')}`,
          { details: failed },
        );
      },
    ),
  };
}
