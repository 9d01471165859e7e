import type { WorkflowHandle } from '@temporalio/client';
import { currentWaitQuery, type WaitView } from '../../workflows/waits-messages.js';
import { queryOrNull } from './query-run.js';

export type { WaitView };

/**
 * What a running run waits for (every waiting workflow answers `currentWait`); null when it is not
 * waiting, or cannot say (a workflow with no waits, or no worker to answer just now).
 */
export async function currentWaitOf(handle: WorkflowHandle): Promise<WaitView | null> {
  return queryOrNull(handle, currentWaitQuery);
}
