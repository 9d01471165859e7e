import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { parseCallerInput } from '../domain/tenant-input.js';
import { tenantExternalRefKey } from '../domain/search-attributes.js';
import type { rotateTenantKey } from '../../workflows/keys/rotate-tenant-key.js';
import {
  escalateToEmergencyUpdate,
  rotationStatusQuery,
  type RotationStatus,
} from '../../workflows/keys/rotate-tenant-key-messages.js';
import { sendDecision } from './send-decision.js';
import { rotationWorkflowId } from '../domain/ids.js';
import { assertDeployerReady, type DeployerReadiness } from './deployer-readiness.js';
import { rotateTenantKeyInputSchema } from '../domain/rotation-input.js';

export {
  assertDeployerReady,
  DeployerNotConfiguredError,
  deployerReadinessOf,
  type DeployerReadiness,
} from './deployer-readiness.js';

export type RotationHandle = WorkflowHandle<typeof rotateTenantKey> & { started: boolean };

export async function startRotation(
  client: Client,
  rawInput: unknown,
  options: {
    taskQueue: string;
    operator?: string;
    /** The CLI and the gateway pass it: a deployer that cannot run is refused here. */ deployers?: DeployerReadiness;
  },
): Promise<RotationHandle> {
  const input = parseCallerInput(rotateTenantKeyInputSchema, rawInput);
  if (options.deployers) assertDeployerReady(input, options.deployers);
  const workflowId = rotationWorkflowId(input.externalRef, input.slot);
  try {
    const handle = await client.workflow.start<typeof rotateTenantKey>('rotateTenantKey', {
      taskQueue: options.taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
    });
    return Object.assign(handle, { started: true });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  const handle = client.workflow.getHandle<typeof rotateTenantKey>(workflowId);
  if (input.emergency) {
    // An Update: a refusal (e.g. the run is already rolling back) reaches the caller instead of vanishing.
    await sendDecision(client, workflowId, escalateToEmergencyUpdate, {
      operator: options.operator ?? 'unknown',
      reason: input.reason ?? 'emergency rotation requested while a rotation was running',
    });
  }
  return Object.assign(handle, { started: false });
}

/**
 * For a close (or an operator): cancels the running rotation of a slot and waits until it has
 * rolled back (new key revoked, old one redeployed) or finished. Resolves with its last status,
 * or null when no rotation of the slot ever ran.
 */
export async function cancelRotation(
  client: Client,
  externalRef: string,
  slot: string,
): Promise<RotationStatus | null> {
  const handle = client.workflow.getHandle<typeof rotateTenantKey>(rotationWorkflowId(externalRef, slot));
  try {
    const description = await handle.describe();
    if (description.status.name === 'RUNNING') await handle.cancel();
    await handle.result().catch((error: unknown) => {
      if (!(error instanceof WorkflowFailedError)) throw error;
    });
    return await handle.query(rotationStatusQuery);
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return null;
    throw error;
  }
}
