import type { Logger } from '../src/infra/log.js';
import type { Pool } from '../src/db/pool.js';
import { getFundingParent, getFundingParentAndTenantRecorded, type FundingParentRow } from '../src/db/funding-store.js';
import { shortfallDetail, shortfallHolds } from '../src/domain/parent-shortfall.js';
import { findTenant, type TenantRow } from '../src/db/tenants-store.js';
import type { OnboardTenantInput } from '../src/domain/tenant-input.js';
import { FailureCode } from '../src/domain/failures.js';
import { PlatformError, type PlatformClient } from '../src/platform/index.js';
import { activityFailure } from './failures.js';

/**
 * The checks an onboarding can pass before anything is created: the external ref is free, the
 * parent's paid balance was not refused the funding amount or less, the platform answers. Read-only: one GET on the
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
  options: {
    ownRecordResumes: boolean;
    askPlatform?: boolean;
    /** The ref's record as the caller just read it (null: none), so it is not read twice. */
    recorded?: TenantRow | null;
    /** The parent's funding row as the caller just read it, likewise. */
    parent?: FundingParentRow;
  },
): Promise<PreflightCheck[]> {
  const checks: PreflightCheck[] = [];
  const tenant =
    options.recorded !== undefined ? (options.recorded ?? undefined) : await findTenant(deps.pool, input.externalRef);
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
    // The contract shows no endpoint for the parent's own balance: the best evidence is the smallest
    // amount the platform last refused for INSUFFICIENT_BALANCE (src/domain/parent-shortfall.ts);
    // funding below it goes ahead, funding at or above it would meet the same refusal.
    const parent = options.parent ?? (await getFundingParent(deps.pool));
    const shortfall = { since: parent.insufficientSince, refusedMicroUsd: parent.insufficientMicroUsd };
    checks.push(
      shortfallHolds(shortfall, input.fundingMicroUsd)
        ? { check: 'parentBalance', ok: false, detail: shortfallDetail(shortfall, input.fundingMicroUsd) }
        : {
            check: 'parentBalance',
            ok: true,
            detail: parent.insufficientSince
              ? `${input.fundingMicroUsd} micro-USD is less than the ${parent.insufficientMicroUsd} micro-USD the ` +
                `platform refused for INSUFFICIENT_BALANCE: it may be covered`
              : `no insufficient-balance state recorded (the platform shows no parent balance to ` +
                `compare ${input.fundingMicroUsd} micro-USD with)`,
          },
    );
  }

  // Inside a run the sub-account create is the platform check: a definite refusal (401/403) comes
  // before anything is created, and a read here would be a fifth platform call per onboarding.
  if (options.askPlatform === false) return checks;
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

/**
 * The onboarding's own preflight, run by its input-validation step (no step of its own: no history
 * event, no platform call): a fresh onboarding whose ref is taken or whose funding the parent is
 * recorded short of fails PREFLIGHT_FAILED before anything is created. A run that resumes its own
 * record is not checked: it has created things already.
 */
export async function preflightInsideRun(
  deps: { pool: Pool; platform: PlatformClient; logger: Pick<Logger, 'warn'> },
  input: Pick<OnboardTenantInput, 'externalRef' | 'name' | 'fundingMicroUsd'>,
): Promise<void> {
  let checks: PreflightCheck[];
  try {
    // Whether the ref is recorded and the parent's shortfall, in one statement.
    const { parent, tenantRecorded } = await getFundingParentAndTenantRecorded(deps.pool, input.externalRef);
    if (tenantRecorded) return;
    checks = await runOnboardingChecks(deps, input, {
      ownRecordResumes: true,
      askPlatform: false,
      recorded: null,
      parent,
    });
  } catch (error) {
    // Our records unreachable for now: the steps that follow check the ref again, atomically, and
    // retry their own database work; an early warning is not worth failing the run for.
    deps.logger.warn(
      { externalRef: input.externalRef, err: (error as Error).message },
      'onboarding preflight skipped: records not readable',
    );
    return;
  }
  const failed = checks.filter((c) => !c.ok && !c.transient);
  if (failed.length === 0) return;
  throw activityFailure(
    FailureCode.PREFLIGHT_FAILED,
    `onboarding preflight: ${failed.map((c) => `${c.check}: ${c.detail}`).join('; ')}`,
    { details: failed },
  );
}
