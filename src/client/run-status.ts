import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, TemporalFailure } from '@temporalio/common';
import { safeSnippet } from '../platform/secret-token.js';
import { currentWaitOf, type WaitView } from './current-wait.js';

/** Why a run ended without completing: the failure's message and its causes, redacted and cut short. */
export interface RunFailure {
  message: string;
  /** The deepest ApplicationFailure type: the failure code. */
  type: string | null;
  causes: string[];
}

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
  failure: RunFailure | null;
  /** Running runs: what the run waits for now (stage, since, the decisions that apply), else null. */
  waiting: WaitView | null;
}

/** A run as the tenant view lists it (last-runs.ts): its view, its run id and its times. */
export interface RunRecord<R = unknown> extends RunView<R> {
  runId: string;
  /** The workflow type (`convergeTenantPlan`, `rolloutPlan`, …). */
  type: string;
  startedAt: string;
  closedAt: string | null;
  /** The run that started this one as its child (a fleet run, or the tenant's own run), else null. */
  parent: string | null;
}

/** The latest run under `workflowId`; null when there has been none. The one reader of a run. */
export async function readRun<R = unknown>(client: Client, workflowId: string): Promise<RunRecord<R> | null> {
  let description;
  try {
    description = await client.workflow.getHandle(workflowId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
  const run: RunRecord<R> = {
    workflowId,
    runId: description.runId,
    type: description.type,
    status: description.status.name,
    startedAt: description.startTime.toISOString(),
    closedAt: description.closeTime?.toISOString() ?? null,
    parent: description.parentExecution?.workflowId ?? null,
    result: null,
    failure: null,
    waiting: null,
  };
  if (run.status === 'RUNNING' || run.status === 'CONTINUED_AS_NEW') {
    run.waiting = await currentWaitOf(client.workflow.getHandle(workflowId));
    return run;
  }
  // This run only (followRuns off): its close event holds the result or the failure.
  const handle = client.workflow.getHandle(workflowId, description.runId, { followRuns: false });
  try {
    run.result = (await handle.result()) as R;
  } catch (error) {
    run.failure = failureOf(error);
  }
  return run;
}

/** The latest run under `workflowId` as the gateway answers it; null when there has been none. */
export async function describeRun<R = unknown>(client: Client, workflowId: string): Promise<RunView<R> | null> {
  const run = await readRun<R>(client, workflowId);
  if (!run) return null;
  const { status, result, failure, waiting } = run;
  return { workflowId, status, result, failure, waiting };
}

/**
 * The chain below "workflow failed": the message says what failed, the causes why; the deepest application type is the
 * code.
 */
function failureOf(error: unknown): RunFailure {
  const chain: Error[] = [];
  for (
    let at: unknown = error instanceof WorkflowFailedError ? error.cause : error;
    at instanceof Error && chain.length < 5;
    at = at.cause
  )
    chain.push(at);
  if (chain.length === 0) return { message: safeSnippet(String(error), 300), type: null, causes: [] };
  // "Activity task failed" says where, not what: the message is the first failure that is not such a wrapper.
  const first = Math.max(
    0,
    chain.findIndex((failure) => !(failure instanceof ActivityFailure || failure instanceof ChildWorkflowFailure)),
  );
  const messages = chain
    .slice(first)
    .map((failure) =>
      safeSnippet(failure instanceof TemporalFailure ? failure.message : `${failure.name}: ${failure.message}`, 300),
    );
  const type = chain.reduce<string | null>(
    (found, failure) => (failure instanceof ApplicationFailure && failure.type ? failure.type : found),
    null,
  );
  return { message: messages[0]!, type, causes: messages.slice(1) };
}
