/**
 * dispatchEvents — why: every state change writes its event into the outbox in its own transaction;
 * something must turn those rows into deliveries without ever losing or doubling one. One dispatcher
 * per task queue (id `event-dispatcher:<queue>`, started by the worker) loops:
 *
 *   dispatchOutbox (LISTEN; fan a batch out into delivery rows; signal-with-start each
 *   (subscription, tenant) stream; mark the batch dispatched) ⟲ ─► continue-as-new every 200 rounds
 *
 * A crash at any point repeats idempotent work: rows are unique per (subscription, event), starts
 * are by workflow id, and marking comes last.
 */
import {
  continueAsNew,
  defineQuery,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { DispatchEventsInput } from '../src/domain/event-streams.js';
import { dispatchEventsInputProblems } from '../src/domain/event-stream-input.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';

const { dispatchOutbox } = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** What the dispatcher is doing, for operators and the chaos checker (it runs as long as the worker). */
export const eventDispatcherStatusQuery = defineQuery<{ stage: string; waitingFor: string | null }>(
  'eventDispatcherStatus',
);

export async function dispatchEvents(input: DispatchEventsInput = {}): Promise<void> {
  // A start from outside the worker (the Web UI) may hand it anything: refused at once, never a stuck task.
  const problems = dispatchEventsInputProblems(input);
  if (problems.length)
    throw codedFailure(FailureCode.INVALID_INPUT, `invalid dispatchEvents input: ${problems.join('; ')}`, {
      details: { problems },
    });
  const status = { stage: 'dispatching', waitingFor: 'new outbox rows (LISTEN), a batch at a time' };
  setHandler(eventDispatcherStatusQuery, () => status);
  setCurrentDetails(
    `**dispatching** — the event dispatcher of task queue \`${workflowInfo().taskQueue}\`: turns outbox ` +
      'rows into delivery streams, one per (subscription, tenant); it runs as long as the worker',
  );
  for (let round = 0; round < 200 && !workflowInfo().continueAsNewSuggested; round++) {
    await dispatchOutbox({
      limit: input.batch ?? 500,
      waitMs: input.waitMs ?? 5_000,
      ...(input.policy ? { policy: input.policy } : {}),
    });
  }
  await continueAsNew<typeof dispatchEvents>(input);
}
