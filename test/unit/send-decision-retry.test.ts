import { describe, expect, it } from 'vitest';
import { isTaskFailure } from '../../src/client/send-decision.js';

/**
 * An operator decision sent while the run's workflow task is being retried after a failure (an earlier update
 * refused by its validator while a local activity held the task open fails that task) is answered
 * FAILED_PRECONDITION "Workflow Task in failed state": nothing reached history, so the decision is sent again
 * (CI saw the verdict of fund-tenant's reconcile test refused this way once, at 450c0ce).
 */
describe('sendDecision: which answers mean "send it again"', () => {
  const rpc = (message: string) => Object.assign(new Error('Workflow Update failed'), { cause: new Error(message) });

  it('a task that failed with the update, and an update that met a task in failed state', () => {
    expect(isTaskFailure(rpc('unexpected workflow task failure: Rejection while ProvisionallyAccepted'))).toBe(true);
    expect(
      isTaskFailure(
        rpc('9 FAILED_PRECONDITION: Unable to perform workflow execution update due to Workflow Task in failed state.'),
      ),
    ).toBe(true);
  });

  it('anything else is an answer, not a retry', () => {
    expect(isTaskFailure(rpc('5 NOT_FOUND: workflow execution not found'))).toBe(false);
    expect(isTaskFailure(new Error('no cause'))).toBe(false);
  });
});
