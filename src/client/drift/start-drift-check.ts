import { type Client, type WorkflowHandle } from '@temporalio/client';
import { findTenant, TenantNotFoundError } from '../../db/tenants-store.js';
import type { Pool } from '../../db/pool.js';
import { parseInput } from '../../domain/tenant-input.js';
import type { reconcileFleet } from '../../../workflows/reconcile-fleet.js';
import { driftCheckWorkflowId } from '../../domain/ids.js';
import { reconcileFleetInputSchema, type ReconcileFleetInput } from '../../domain/drift-input.js';

/**
 * Starts a drift check of the fleet or of one tenant, or joins the one of that scope already running
 * (conflict policy USE_EXISTING: two operators asking at once get one check). The input is
 * validated and an unknown tenant refused here, before anything starts or is written.
 */
export async function startDriftCheck(
  deps: { client: Client; pool: Pool },
  rawInput: ReconcileFleetInput,
  options: { taskQueue: string },
): Promise<WorkflowHandle<typeof reconcileFleet>> {
  const input = parseInput(reconcileFleetInputSchema, rawInput);
  if (input.externalRef && !(await findTenant(deps.pool, input.externalRef)))
    throw new TenantNotFoundError(input.externalRef);
  return deps.client.workflow.start<typeof reconcileFleet>('reconcileFleet', {
    taskQueue: options.taskQueue,
    workflowId: driftCheckWorkflowId(input.externalRef),
    args: [rawInput],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}
