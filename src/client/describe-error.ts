import { ApplicationFailure, TemporalFailure } from '@temporalio/common';

/**
 * The reason a workflow or an activity failed, for one line of CLI output. A Temporal client reports a
 * failed run as "Workflow execution failed"; the operator needs what is under it: the innermost
 * application failure's type and message (an activity's own failure sits under "Activity task failed").
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const chain: Error[] = [];
  for (let current: unknown = error; current instanceof Error && chain.length < 10; current = current.cause)
    chain.push(current);
  if (!chain.some((e) => e instanceof TemporalFailure) && !/Workflow execution/.test(error.message))
    return error.message;
  const application = chain.filter((e): e is ApplicationFailure => e instanceof ApplicationFailure).at(-1);
  const innermost = application ?? chain.at(-1)!;
  const type = application?.type ? `${application.type}: ` : '';
  return `${error.message}: ${type}${innermost.message}`;
}
