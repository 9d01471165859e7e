import { ApplicationFailure, type WorkflowHandle } from '@temporalio/client';
import { expect } from 'vitest';

/**
 * How a run with a bad input ended: it must fail at once with a non-retryable INVALID_INPUT naming each field
 * (details.problems), not complete, and not stay running with a workflow task that fails for ever (which any
 * later start with the same id would join). Waits `withinMs` at most; a run still running by then counts as stuck.
 */
export async function refusalOf(
  handle: WorkflowHandle,
  withinMs = 20_000,
): Promise<{ type: string; problems: string[]; message: string }> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    handle.result().then(
      () => ({ ended: 'completed' as const }),
      (error: unknown) => ({ ended: 'failed' as const, error }),
    ),
    new Promise<{ ended: 'stuck' }>((resolve) => {
      timer = setTimeout(() => resolve({ ended: 'stuck' }), withinMs);
    }),
  ]);
  clearTimeout(timer);
  expect(outcome.ended, 'the run fails at once (not completed, not a workflow task failing for ever)').toBe('failed');
  const cause = (outcome as { error: Error }).error.cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  const failure = cause as ApplicationFailure;
  expect(failure.nonRetryable).toBe(true);
  expect((await handle.describe()).status.name).toBe('FAILED');
  const details = failure.details?.[0] as { problems?: string[] } | undefined;
  return { type: failure.type ?? '', problems: details?.problems ?? [], message: failure.message };
}
