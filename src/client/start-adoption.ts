import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { findTenant, TenantNotFoundError } from '../db/tenants-store.js';
import { listUnmanagedKeys } from '../db/adoptions-store.js';
import type { Queryable } from '../db/pool.js';
import { rotationWorkflowId } from '../domain/ids.js';
import { adoptTenantKeysInputSchema } from '../domain/import-input.js';
import { tenantExternalRefKey } from '../domain/search-attributes.js';
import { InvalidInputError, parseCallerInput } from '../domain/tenant-input.js';
import type { adoptTenantKeys } from '../../workflows/keys/adopt-tenant-keys.js';
import { assertDeployerReady, type DeployerReadiness } from './deployer-readiness.js';

/**
 * `tenantctl rotate-key R --adopt`: starts adoptTenantKeys (id `rotate:<ref>:<slot>`, like any rotation
 * of the slot). Refused before anything starts: an unknown tenant, one that is not active, a slot
 * without unmanaged keys, a deployer this configuration cannot run, a rotation of the slot running.
 */
export async function startAdoption(
  deps: { client: Client; db: Queryable },
  rawInput: unknown,
  options: { taskQueue: string; deployers?: DeployerReadiness },
): Promise<WorkflowHandle<typeof adoptTenantKeys>> {
  const input = parseCallerInput(adoptTenantKeysInputSchema, rawInput);
  const tenant = await findTenant(deps.db, input.externalRef);
  if (!tenant) throw new TenantNotFoundError(input.externalRef);
  if (tenant.status !== 'active')
    throw new InvalidInputError([
      `${input.externalRef}: the tenant is ${tenant.status}; only active tenants are rotated`,
    ]);
  if (!(await listUnmanagedKeys(deps.db, input.externalRef, input.slot)).length)
    throw new InvalidInputError([
      `--adopt: tenant ${input.externalRef} has no unmanaged key in slot ${input.slot} (rotate it without --adopt)`,
    ]);
  if (options.deployers) assertDeployerReady(input, options.deployers);
  const workflowId = rotationWorkflowId(input.externalRef, input.slot);
  try {
    return await deps.client.workflow.start<typeof adoptTenantKeys>('adoptTenantKeys', {
      taskQueue: options.taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      throw new Error(
        `a rotation of ${input.externalRef} slot ${input.slot} is running (${workflowId}): let it finish first`,
        { cause: error },
      );
    throw error;
  }
}
