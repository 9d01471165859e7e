import { getExternalWorkflowHandle, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { msOf } from '../src/domain/durations.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { closeWaitDatabaseStep } from './activity-policies.js';

/**
 * For closeTenant, from workflow code: call it AFTER the tenant's record says `closing` (new
 * rotations are then refused). Cancels every open rotation of the tenant and waits until each has
 * rolled back: the new key revoked, the old one redeployed, the record `cancelled`. A rotation
 * already past revoking its old key just finishes. Either way no extra active key remains.
 *
 * Throws ROTATION_STILL_OPEN (retryable) after `timeout`; a record left open by a run that was
 * terminated (nothing left to cancel) is reported in the failure's details.
 */
const db = proxyLocalActivities<Activities>(closeWaitDatabaseStep);

export async function cancelRotationsForClose(
  externalRef: string,
  options: { pollInterval?: string; timeout?: string } = {},
): Promise<{ cancelled: string[] }> {
  const pollMs = msOf(options.pollInterval ?? '1s');
  const deadline = Date.now() + msOf(options.timeout ?? '10m');
  let open = await db.listOpenRotationsOfTenant({ externalRef });
  const cancelled = open.map((r) => r.workflowId);
  for (const rotation of open) {
    // Not found or already closed: nothing to cancel; the record is watched below all the same.
    await getExternalWorkflowHandle(rotation.workflowId)
      .cancel()
      .catch(() => undefined);
  }
  while (open.length > 0) {
    if (Date.now() >= deadline) {
      throw codedFailure(FailureCode.ROTATION_STILL_OPEN, `rotations of ${externalRef} still open`, {
        details: { open },
        retryable: true,
      });
    }
    await sleep(pollMs);
    open = await db.listOpenRotationsOfTenant({ externalRef });
  }
  return { cancelled };
}
