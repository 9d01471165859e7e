import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { currentWaitOf, type WaitView } from './current-wait.js';
import { failureOf, type LastRun } from './last-runs.js';

/**
 * Where one run stands, by its workflow id (the business key): what a caller of the gateway polls
 * after a 202 (`tenantctl ... --wait`), in place of awaiting a Temporal handle it cannot hold.
 */
export interface RunView<R = unknown> {
  workflowId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, … */
  status: string;
  /** Completed runs: the workflow's result (results carry ids and fingerprints, never a secret). */
  result: R | null;
  /** Runs that ended without completing: why (redacted, cut short). */
  failure: NonNullable<LastRun['failure']> | null;
  /** Running runs: what the run waits for now (stage, since, the decisions that apply), else null. */
  waiting: WaitView | null;
}

/** The latest run under `workflowId`; null when there has been none. */
export async function describeRun<R = unknown>(client: Client, workflowId: string): Promise<RunView<R> | null> {
  let description;
  try {
    description = await client.workflow.getHandle(workflowId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
  const view: RunView<R> = { workflowId, status: description.status.name, result: null, failure: null, waiting: null };
  if (view.status === 'RUNNING' || view.status === 'CONTINUED_AS_NEW') {
    view.waiting = await currentWaitOf(client.workflow.getHandle(workflowId));
    return view;
  }
  // This run only: its close event holds the result or the failure.
  const handle = client.workflow.getHandle(workflowId, description.runId, { followRuns: false });
  try {
    view.result = (await handle.result()) as R;
  } catch (error) {
    view.failure = failureOf(error);
  }
  return view;
}
