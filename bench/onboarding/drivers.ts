import type { WorkflowHandleWithStartDetails } from '@temporalio/client';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { OnboardingWorld } from './world.js';

/**
 * One run of each measured workflow, from start to result. Against the in-process worker, started
 * the fastest correct way: a client sharing the worker's NativeConnection with `requestEagerStart`,
 * so the first workflow task comes back in the start response instead of through a poll. Counts
 * how many were eager.
 */
export interface StartCounter {
  started: number;
  eager: number;
}

export function newStartCounter(): StartCounter {
  return { started: 0, eager: 0 };
}

function countStart(counter: StartCounter, handle: unknown): void {
  counter.started += 1;
  if ((handle as Partial<WorkflowHandleWithStartDetails>).eagerlyStarted) counter.eager += 1;
}

/** Where runs go: the in-process worker (eager starts) or the worker process (`worker-process.ts`). */
export interface Target {
  taskQueue: string;
  eager: boolean;
}

export function onboardingRunner(
  world: OnboardingWorld,
  fundingMicroUsd: string,
  counter: StartCounter,
  target: Target,
) {
  return async (externalRef: string): Promise<void> => {
    const handle = await startOnboarding(
      world.client,
      { externalRef, name: `Bench ${externalRef}`, fundingMicroUsd },
      { taskQueue: target.taskQueue, requestEagerStart: target.eager },
    );
    if (!handle.started)
      throw new Error(`onboarding of ${externalRef} was already started: external refs must be fresh per run`);
    countStart(counter, handle);
    const result = await handle.result();
    if (result.status !== 'active') throw new Error(`onboarding of ${externalRef} ended ${String(result.status)}`);
  };
}

export type BareKind = 'regular' | 'local';

export function bareRunner(
  world: OnboardingWorld,
  kind: BareKind,
  waitMs: number,
  counter: StartCounter,
  target: Target,
) {
  const workflowType = kind === 'regular' ? 'bareThreeActivities' : 'bareThreeLocalActivities';
  return async (workflowId: string): Promise<void> => {
    const handle = await world.client.workflow.start(workflowType, {
      taskQueue: target.taskQueue,
      workflowId,
      args: [{ waitMs }],
      requestEagerStart: target.eager,
    });
    countStart(counter, handle);
    await handle.result();
  };
}
