import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { listUnmanagedKeys } from '../../db/adoptions-store.js';
import type { Queryable } from '../../db/pool.js';
import { findActiveKey } from '../../db/tenant-keys-store.js';
import { findTenant, TenantNotFoundError } from '../../db/tenants-store.js';
import { rotationWorkflowId } from '../../domain/ids.js';
import { adoptTenantKeysInputSchema } from '../../domain/import-input.js';
import { rotateTenantKeyInputSchema } from '../../domain/rotation-input.js';
import { tenantExternalRefKey } from '../../domain/search-attributes.js';
import { InvalidInputError, parseCallerInput } from '../../domain/tenant-input.js';
import { assertTenantAllows, rotationRefusal } from '../../domain/tenant-rules.js';
import type { adoptTenantKeys } from '../../../workflows/keys/adopt-tenant-keys.js';
import type { rotateTenantKey } from '../../../workflows/keys/rotate-tenant-key.js';
import {
  escalateToEmergencyUpdate,
  rotationStatusQuery,
  type RotationStatus,
} from '../../../workflows/keys/rotate-tenant-key-messages.js';
import { assertDeployerReady, type DeployerReadiness } from './deployer-readiness.js';
import { sendDecision } from '../send-decision.js';

/**
 * The one starter of a slot's rotation run, `rotate:<ref>:<slot>`: a plain rotation (rotateTenantKey) or an
 * adoption of an imported tenant's unmanaged keys (adoptTenantKeys) run under the same id, so one of them at a
 * time. With our records (`db`: the gateway and tenantctl pass them) a tenant that may not be rotated
 * (rotationRefusal), a slot the other kind must rotate and a deployer this configuration cannot run are refused
 * here, before anything starts; a run started without them meets the same rule in its first activity.
 */
export type RotationHandle = WorkflowHandle<typeof rotateTenantKey> & { started: boolean };

/** The slot's rotation cannot start: another run of the slot, or the other kind of rotation is needed. */
export class RotationConflictError extends Error {
  override name = 'RotationConflictError';
  readonly code = 'ROTATION_CONFLICT';
}

interface SlotRotationStart {
  type: 'rotateTenantKey' | 'adoptTenantKeys';
  input: { externalRef: string; slot: string };
  taskQueue: string;
}

/** Starts the slot's run; false when one runs under the id already. */
async function startSlotRun(client: Client, start: SlotRotationStart): Promise<WorkflowHandle | false> {
  try {
    return await client.workflow.start(start.type, {
      taskQueue: start.taskQueue,
      workflowId: rotationWorkflowId(start.input.externalRef, start.input.slot),
      args: [start.input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: start.input.externalRef }]),
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/** The tenant exists and may be rotated now (the one rule, rotationRefusal). */
async function assertRotatable(db: Queryable, externalRef: string): Promise<void> {
  const tenant = await findTenant(db, externalRef);
  if (!tenant) throw new TenantNotFoundError(externalRef);
  assertTenantAllows(rotationRefusal, tenant);
}

/** Rotates the slot's key; a second call while one runs joins it (an emergency one escalates it). */
export async function startRotation(
  client: Client,
  rawInput: unknown,
  options: {
    taskQueue: string;
    operator?: string;
    /** The CLI and the gateway pass it: a deployer that cannot run is refused here. */ deployers?: DeployerReadiness;
    /** Our records (the CLI and the gateway pass them): the tenant's rule and the slot's keys are checked here. */
    db?: Queryable;
  },
): Promise<RotationHandle> {
  const input = parseCallerInput(rotateTenantKeyInputSchema, rawInput);
  if (options.db) {
    await assertRotatable(options.db, input.externalRef);
    const { externalRef, slot } = input;
    const unmanaged = await listUnmanagedKeys(options.db, externalRef, slot);
    if (unmanaged.length > 0 && !(await findActiveKey(options.db, externalRef, slot)))
      throw new RotationConflictError(
        `tenant ${externalRef} has only unmanaged (imported) keys in slot ${slot}: ` +
          'rotate it with --adopt (POST …/adopt); nothing was started',
      );
  }
  if (options.deployers) assertDeployerReady(input, options.deployers);
  const started = await startSlotRun(client, { type: 'rotateTenantKey', input, taskQueue: options.taskQueue });
  if (started) return Object.assign(started as WorkflowHandle<typeof rotateTenantKey>, { started: true });
  const workflowId = rotationWorkflowId(input.externalRef, input.slot);
  if (input.emergency) {
    // An Update: a refusal (e.g. the run is already rolling back) reaches the caller instead of vanishing.
    await sendDecision(client, workflowId, escalateToEmergencyUpdate, {
      operator: options.operator ?? 'unknown',
      reason: input.reason ?? 'emergency rotation requested while a rotation was running',
    });
  }
  return Object.assign(client.workflow.getHandle<typeof rotateTenantKey>(workflowId), { started: false });
}

/**
 * `tenantctl rotate-key R --adopt`: adopts the slot's unmanaged keys. Refused before anything starts: an
 * unknown tenant, one that may not be rotated, a slot without unmanaged keys, a deployer this configuration
 * cannot run, a rotation of the slot running (RotationConflictError).
 */
export async function startAdoption(
  deps: { client: Client; db: Queryable },
  rawInput: unknown,
  options: { taskQueue: string; deployers?: DeployerReadiness },
): Promise<WorkflowHandle<typeof adoptTenantKeys>> {
  const input = parseCallerInput(adoptTenantKeysInputSchema, rawInput);
  await assertRotatable(deps.db, input.externalRef);
  if (!(await listUnmanagedKeys(deps.db, input.externalRef, input.slot)).length)
    throw new InvalidInputError([
      `--adopt: tenant ${input.externalRef} has no unmanaged key in slot ${input.slot} (rotate it without --adopt)`,
    ]);
  if (options.deployers) assertDeployerReady(input, options.deployers);
  const started = await startSlotRun(deps.client, { type: 'adoptTenantKeys', input, taskQueue: options.taskQueue });
  if (started) return started as WorkflowHandle<typeof adoptTenantKeys>;
  const workflowId = rotationWorkflowId(input.externalRef, input.slot);
  throw new RotationConflictError(
    `a rotation of ${input.externalRef} slot ${input.slot} is running (${workflowId}): let it finish first`,
  );
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
