import { ActivityFailure, ApplicationFailure, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ParsedWorkflowInput, WorkflowInputSchemaName } from '../activities/input-validation.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { inputCheck } from './activity-policies.js';

/**
 * Every workflow validates its plain-JSON input first (a Web-UI start gets the same rules as the
 * CLI) — in a local activity, so zod stays out of the workflow bundle — and checks that its id is
 * the business key, so a second start cannot run the same job twice.
 */
const check = proxyLocalActivities<Activities>(inputCheck);

export async function validateWorkflowInput<K extends WorkflowInputSchemaName>(
  schema: K,
  rawInput: unknown,
  expectedId: (input: ParsedWorkflowInput<K>) => string | null,
): Promise<ParsedWorkflowInput<K>> {
  let input: ParsedWorkflowInput<K>;
  try {
    input = (await check.validateWorkflowInput({
      schema,
      input: rawInput,
      workflowType: workflowInfo().workflowType,
    })) as ParsedWorkflowInput<K>;
  } catch (error) {
    // Fail the run with the activity's INVALID_INPUT (or the onboarding's PREFLIGHT_FAILED) itself, not wrapped in an ActivityFailure.
    if (
      error instanceof ActivityFailure &&
      error.cause instanceof ApplicationFailure &&
      (error.cause.type === FailureCode.INVALID_INPUT || error.cause.type === FailureCode.PREFLIGHT_FAILED)
    )
      throw error.cause;
    throw error;
  }
  const expected = expectedId(input);
  const actual = workflowInfo().workflowId;
  if (expected !== null && actual !== expected) {
    throw codedFailure(FailureCode.INVALID_INPUT, `the workflow id must be ${expected} (it is ${actual})`);
  }
  return input;
}

export { msOf } from '../src/domain/durations.js';
