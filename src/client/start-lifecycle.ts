import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { lifecycleInputSchema, parseInput, type LifecycleRequest } from '../domain/tenant-input.js';
import { tenantExternalRefKey } from '../domain/search-attributes.js';
import { DEFAULT_TASK_QUEUE } from './start-onboarding.js';
import { lifecycleWorkflowId } from '../domain/ids.js';

export const LifecycleAction = { suspend: 'suspendTenant', resume: 'resumeTenant', close: 'closeTenant' } as const;
export type LifecycleAction = keyof typeof LifecycleAction;

/**
 * Starts suspend / resume / close for a tenant. The id is `<action>:<externalRef>`: a second request
 * while one runs joins it (USE_EXISTING), a later one starts anew (a close of a closed tenant is a
 * no-op success). The input is validated before anything is started.
 */
export async function startLifecycle(
  client: Client,
  action: LifecycleAction,
  rawInput: unknown,
  options: { taskQueue?: string } = {},
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  const input: LifecycleRequest = parseInput(lifecycleInputSchema, rawInput);
  return client.workflow.start(LifecycleAction[action], {
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: lifecycleWorkflowId(action, input.externalRef),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
  });
}
