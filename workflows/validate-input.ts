import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import type { z } from 'zod';
import { InvalidInputError, parseInput } from '../src/domain/tenant-input.js';

/**
 * Every workflow validates its plain-JSON input first (a Web-UI start gets the same rules as the
 * CLI), and checks that its id is the business key, so a second start cannot run the same job twice.
 */
export function validateWorkflowInput<T extends { externalRef: string }>(schema: z.ZodType<T>, rawInput: unknown, idPrefix: string, idSuffix?: string): T {
  let input: T;
  try {
    input = parseInput(schema, rawInput);
  } catch (error) {
    const problems = error instanceof InvalidInputError ? error.problems : [String(error)];
    throw ApplicationFailure.nonRetryable(`invalid ${workflowInfo().workflowType} input: ${problems.join('; ')}`, 'INVALID_INPUT', { problems });
  }
  const expected = `${idPrefix}:${input.externalRef}${idSuffix === undefined ? '' : `:${idSuffix}`}`;
  const actual = workflowInfo().workflowId;
  if (actual !== expected) {
    throw ApplicationFailure.nonRetryable(`the workflow id must be ${expected} (it is ${actual})`, 'INVALID_INPUT');
  }
  return input;
}

export { msOf } from '../src/domain/durations.js';
