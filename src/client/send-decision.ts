import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import type { DecisionAnswer } from '../domain/operator-decisions.js';

/** A decision the workflow refused (its validator), or no run to send it to. Nothing was recorded. */
export class DecisionRefusedError extends Error {
  override name = 'DecisionRefusedError';
  constructor(
    message: string,
    /** INVALID_DECISION | DECISION_NOT_APPLICABLE | WORKFLOW_NOT_FOUND */
    readonly code: string,
  ) {
    super(message);
  }
}

/** How often, and how far apart, a decision that met a run's first workflow task is sent again (about 3 s). */
const FIRST_TASK_ATTEMPTS = 10;
const FIRST_TASK_RETRY_MS = 300;

/**
 * Sends an operator decision as a Temporal Update and waits for its answer. The workflow's
 * validator is the one authority on the rules (src/domain/operator-decisions.ts): its refusal comes
 * back here with the field and the rule, before anything reached history.
 */
export async function sendDecision<Decision>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<DecisionAnswer, [Decision]>,
  decision: Decision,
): Promise<DecisionAnswer> {
  // One update id for every attempt: an attempt the client saw fail can still have landed (its workflow task failed
  // and the retried task took it), and the server answers a second send of the same id with the first one's outcome
  // instead of running the decision twice, or of refusing it because the run it completed has ended.
  const updateId = randomUUID();
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send(client, workflowId, update, decision, updateId, attempt > 1);
    } catch (error) {
      // A run that continued as new while the update was on its way aborts it ("aborted by closing
      // workflow"); the workflow goes on in its next run, which takes the decision (workflows/waits.ts).
      if (attempt < 5 && (error as Error).name === 'DecisionAbortedByContinuation') continue;
      // A run that has not finished its first workflow task (just started, or just continued as new: it
      // checks its input before it installs its handlers) answers "no registered handler". Sent again
      // shortly, it lands once the run is up; a workflow that has no such update keeps answering so.
      // An update refused by its validator while the run's workflow task is held open by a long local
      // activity can fail that task instead (the SDK's "Rejection while ProvisionallyAccepted"): nothing
      // reached history, the task is retried, and the decision sent again gets its own answer.
      if (attempt < FIRST_TASK_ATTEMPTS && (isBeforeHandlers(error) || isTaskFailure(error))) {
        await new Promise((resolve) => setTimeout(resolve, FIRST_TASK_RETRY_MS));
        continue;
      }
      throw error;
    }
  }
}

async function send<Decision>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<DecisionAnswer, [Decision]>,
  decision: Decision,
  updateId: string,
  sentBefore: boolean,
): Promise<DecisionAnswer> {
  try {
    return await client.workflow.getHandle(workflowId).executeUpdate(update, { args: [decision], updateId });
  } catch (error) {
    throwIfRefused(error, workflowId, update.name);
    if ((error as Error).name === 'WorkflowNotFoundError') {
      const running = await client.workflow
        .getHandle(workflowId)
        .describe()
        .then((run) => run.status.name === 'RUNNING')
        .catch(() => false);
      if (running) throw Object.assign(new Error((error as Error).message), { name: 'DecisionAbortedByContinuation' });
      // The run has ended; an earlier attempt of this decision may be what ended it: its outcome, if it landed.
      if (sentBefore) {
        const landed = await landedOutcome(client, workflowId, update.name, updateId);
        if (landed) return landed;
      }
      throw new DecisionRefusedError(
        `no running workflow ${workflowId}: nothing is waiting for ${update.name}`,
        'WORKFLOW_NOT_FOUND',
      );
    }
    throw error;
  }
}

/** The outcome of an update that landed on the workflow's last run, or undefined when it never reached history. */
async function landedOutcome(
  client: Client,
  workflowId: string,
  name: string,
  updateId: string,
): Promise<DecisionAnswer | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).getUpdateHandle<DecisionAnswer>(updateId).result();
  } catch (error) {
    throwIfRefused(error, workflowId, name);
    return undefined;
  }
}

/** The workflow's refusal of a decision (its validator or its handler), with the rule it named. */
function throwIfRefused(error: unknown, workflowId: string, name: string): void {
  if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
    const { message, type } = error.cause;
    throw new DecisionRefusedError(`${workflowId} refused ${name}: ${message}`, type ?? 'REFUSED');
  }
}

/** The SDK's refusal of an Update that reached a run before its handlers were installed. */
function isBeforeHandlers(error: unknown): boolean {
  return error instanceof DecisionRefusedError && /No registered handler for update/.test(error.message);
}

/**
 * The server's answers when the workflow task that carried the update failed, or when the update arrives while the
 * run's workflow task is being retried after such a failure ("Workflow Task in failed state", FAILED_PRECONDITION):
 * either way the update never reached history, and sent again shortly it lands on the retried task.
 */
export function isTaskFailure(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error && /unexpected workflow task failure|Workflow Task in failed state/.test(cause.message);
}
