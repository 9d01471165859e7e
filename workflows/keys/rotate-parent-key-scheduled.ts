/**
 * rotateParentKeyOnSchedule — why: a Temporal Schedule suffixes workflow ids with the fire time, so the schedule's
 * action is this launcher, which starts the rotation as a child under its business id `rotate-parent-key`: a
 * scheduled and an on-demand rotation can never run side by side (a fire during one is skipped).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { executeChild, ParentClosePolicy } from '@temporalio/workflow';
import { PARENT_KEY_ROTATION_WORKFLOW_ID } from '../../src/domain/ids.js';
import type { RotateParentKeyInput } from '../../src/domain/key-slot-input.js';
import { rotateParentKey } from './rotate-parent-key.js';
import { validateWorkflowInput } from '../validate-input.js';

export async function rotateParentKeyOnSchedule(
  rawInput: RotateParentKeyInput,
): Promise<{ workflowId: string; outcome: 'completed' | 'skipped_already_running' }> {
  await validateWorkflowInput('rotateParentKey', rawInput, () => null);
  const workflowId = PARENT_KEY_ROTATION_WORKFLOW_ID;
  try {
    await executeChild(rotateParentKey, {
      workflowId,
      args: [rawInput],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
    return { workflowId, outcome: 'completed' };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { workflowId, outcome: 'skipped_already_running' };
    throw error;
  }
}
