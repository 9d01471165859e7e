import { ActivityFailure, ApplicationFailure, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ParsedWorkflowInput, WorkflowInputSchemaName } from '../activities/input-validation.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { workflowIdProblem } from '../src/domain/ids.js';
import { inputCheck } from './activity-policies.js';

/**
 * Every workflow validates its plain-JSON input first (a Web-UI start gets the same rules as the
 * CLI) — in a local activity, so zod stays out of the workflow bundle, with the worker's configuration
 * and our records for the server's policy (activities/input-validation.ts) — and checks that its id is
 * the business key, so a second start cannot run the same job twice. A refused input fails the run at
 * once (INVALID_INPUT), never its workflow task. The check's answer is recorded (a marker), so a change
 * of its rules never changes how a running workflow replays.
 */
const check = proxyLocalActivities<Activities>(inputCheck);

export async function validateWorkflowInput<K extends WorkflowInputSchemaName>(
  schema: K,
  rawInput: unknown,
  expectedId: (input: ParsedWorkflowInput<K>) => string | null,
): Promise<ParsedWorkflowInput<K>> {
  let input: ParsedWorkflowInput<K>;
  try {
    const info = workflowInfo();
    input = (await check.validateWorkflowInput({
      schema,
      input: rawInput,
      workflowType: info.workflowType,
      // Its carried fields are a continued run's own, never a first run's (set by a caller).
      continuedRun: info.continuedFromExecutionRunId !== undefined,
      startedAtMs: info.runStartTime.getTime(),
    })) as ParsedWorkflowInput<K>;
  } catch (error) {
    throw inputRefusal(error) ?? error;
  }
  // A run's carried state (continue-as-new) is trusted as the run's own: only a continuation may hold it,
  // never a start from a caller (gateway, CLI, schedule, Web UI), which could otherwise skip the run's checks.
  if ((input as { continued?: unknown }).continued !== undefined && !workflowInfo().continuedFromExecutionRunId)
    throw codedFailure(
      FailureCode.INVALID_INPUT,
      'continued: set only by a run that continues as new, never by a caller',
    );
  const expected = expectedId(input);
  const problem = expected === null ? null : workflowIdProblem(expected, workflowInfo().workflowId);
  if (problem) throw codedFailure(FailureCode.INVALID_INPUT, problem);
  return input;
}

/**
 * The activity's INVALID_INPUT (or the onboarding's PREFLIGHT_FAILED) itself, for the run to fail
 * with; undefined for any other failure. A local activity's failure reaches the workflow as an
 * ActivityFailure around it, or (seen for a non-retryable INVALID_INPUT) as the
 * ApplicationFailure itself: both are read.
 */
export function inputRefusal(error: unknown): ApplicationFailure | undefined {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  if (
    failure instanceof ApplicationFailure &&
    (failure.type === FailureCode.INVALID_INPUT || failure.type === FailureCode.PREFLIGHT_FAILED)
  )
    return failure;
  return undefined;
}

export { msOf } from '../src/domain/durations.js';
