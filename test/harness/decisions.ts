import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { expect } from 'vitest';

/** The refusal of an Update: its failure type and the `field: rule` lines it names. */
export async function refusal(
  handle: WorkflowHandle,
  name: string,
  arg: unknown,
): Promise<{ type: string | undefined; problems: string[]; message: string }> {
  const error = await handle.executeUpdate(name, { args: [arg] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `${name} ${JSON.stringify(arg)} was accepted`).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (error as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  const failure = cause as ApplicationFailure;
  return {
    type: failure.type ?? undefined,
    problems: (failure.details?.[0] as string[] | undefined) ?? [],
    message: failure.message,
  };
}

/** Waits until the run has completed a workflow task after its latest signal (the signal was handled). */
export async function processed(handle: WorkflowHandle, timeoutMs = 20_000) {
  const { EventType } = temporal.api.enums.v1;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const types = ((await handle.fetchHistory()).events ?? []).map((e) => e.eventType);
    const signalled = types.lastIndexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
    if (signalled >= 0 && types.slice(signalled).includes(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)) return;
    if (Date.now() > deadline) throw new Error('the signal was never handled');
    await new Promise((r) => setTimeout(r, 100));
  }
}
