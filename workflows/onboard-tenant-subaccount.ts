import { ApplicationFailure, patched, proxyActivities, type proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { EnsureSubaccountResult, EnsureSubaccountStepResult } from '../activities/tenants.js';
import { subaccountScan } from './activity-policies.js';

/**
 * The onboarding's sub-account step. New runs look a tenant up after an ambiguous create with a
 * REGULAR activity (`findSubaccountByExternalRef`), not inside the local step: the contract shows no
 * list filter, so the lookup is a scan of the whole fleet, thousands of pages on a platform that pages
 * two at a time. A local activity cannot heartbeat and holds a workflow task slot for its whole run;
 * the regular one heartbeats each page, resumes from its last page when retried, and is retried like
 * any read. Runs recorded before this change keep the inline lookup (patch marker).
 */
const SCAN_PATCH = 'subaccount-scan-activity';

const scan = proxyActivities<Activities>(subaccountScan);

type Steps = ReturnType<typeof proxyLocalActivities<Activities>>;

/**
 * `scanSettled`: the run started after a later patch (onboard-tenant-attributes.ts), so it runs the
 * scan branch without asking: no marker, and no TemporalChangeVersion upsert, for a question whose
 * answer is known. Runs before that patch still ask, and replay as they were recorded.
 */
export async function ensureSubaccountOf(
  steps: Steps,
  input: { externalRef: string; name: string },
  scanSettled = false,
  /** The first step's answer when the run already has it (beginOnboarding, onboard-tenant-attributes.ts). */
  first?: EnsureSubaccountStepResult,
): Promise<EnsureSubaccountResult> {
  if (!scanSettled && !patched(SCAN_PATCH)) return steps.ensureSubaccount(input);
  let result = first ?? (await steps.ensureSubaccountStep(input));
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
