import { ApplicationFailure, proxyActivities, type proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { EnsureSubaccountResult, EnsureSubaccountStepResult } from '../activities/tenants.js';
import { subaccountScan } from './activity-policies.js';

/**
 * The onboarding's sub-account step. A tenant is looked up after an ambiguous create with a REGULAR
 * activity (`findSubaccountByExternalRef`), not inside the local step: the contract shows no list
 * filter, so the lookup is a scan of the whole fleet, thousands of pages on a platform that pages two
 * at a time. A local activity cannot heartbeat and holds a workflow task slot for its whole run; the
 * regular one heartbeats each page, resumes from its last page when retried, and is retried like any read.
 */
const scan = proxyActivities<Activities>(subaccountScan);

type Steps = ReturnType<typeof proxyLocalActivities<Activities>>;

export async function ensureSubaccountOf(
  steps: Steps,
  input: { externalRef: string; name: string },
  /** The first step's answer, which the run already has (beginOnboarding, onboard-tenant.ts). */
  first: EnsureSubaccountStepResult,
): Promise<EnsureSubaccountResult> {
  let result = first;
  while (result.lookupNeeded) {
    const found = await scan.findSubaccountByExternalRef({ externalRef: input.externalRef });
    result = await steps.ensureSubaccountStep({ ...input, found });
  }
  return result;
}

/** An activity failure's own type and message (not "Activity task failed"), for the status and the records. */
export function failureText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const failure =
    error instanceof ApplicationFailure ? error : error.cause instanceof ApplicationFailure ? error.cause : undefined;
  return failure ? `${failure.type ? `${failure.type}: ` : ''}${failure.message}` : error.message;
}
