/**
 * rotateTenantKeyOnSchedule — why: a Temporal Schedule suffixes its workflow ids with the fire
 * time, so a scheduled run could not hold the business key `rotate:<externalRef>:<slot>` itself.
 * This launcher (the schedule's action) starts the rotation as a child under exactly that id, so a
 * scheduled, a manual and a fleet rotation of one slot can never run side by side; it waits for the
 * rotation, so the schedule's SKIP overlap policy also covers a rotation held for an operator.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { executeChild, ParentClosePolicy } from '@temporalio/workflow';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { validateWorkflowInput } from '../validate-input.js';
import { rotateTenantKey } from './rotate-tenant-key.js';

export interface ScheduledRotationResult {
  workflowId: string;
  outcome: 'completed' | 'aborted' | 'skipped_already_running';
}

export async function rotateTenantKeyOnSchedule(rawInput: RotateTenantKeyInput): Promise<ScheduledRotationResult> {
  // The launcher's own id is schedule-made; the child's id is the business key.
  const input = await validateWorkflowInput('rotateTenantKey', rawInput, () => null);
  const workflowId = rotationWorkflowId(input.externalRef, input.slot);
  try {
    const result = await executeChild(rotateTenantKey, {
      workflowId,
      args: [rawInput],
      // Cancelling the launcher cancels the rotation, which then rolls back cleanly (never a terminate).
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
    return { workflowId, outcome: result.outcome };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { workflowId, outcome: 'skipped_already_running' };
    throw error;
  }
}
