/**
 * deliverEventStream — why: a receiver must see a tenant's events in the order they happened, and a
 * slow or dead receiver must hold back nobody else. So there is one workflow per (subscription,
 * tenant) stream (id `event-stream:<subscription>:<tenant>`), woken by the dispatcher:
 *
 *   nextStreamDelivery (oldest pending, by the stream's seq) ─► sendEventDelivery (retried with
 *   backoff, Retry-After honoured, for `retryFor`) ─► delivered | failEventDelivery ─► next
 *   nothing pending ─► wait for `eventsPending` up to `idleFor` ─► end (the next event starts it again)
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  defineSignal,
  defineQuery,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { msOf } from '../src/domain/durations.js';
import { EVENTS_PENDING_SIGNAL, type DeliverEventStreamInput } from '../src/domain/event-streams.js';
import { deliverEventStreamInputProblems } from '../src/domain/event-stream-input.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';

export const eventsPendingSignal = defineSignal<[]>(EVENTS_PENDING_SIGNAL);

// Reads and settles are short database steps: local activities, inside the workflow task (no extra server round trip).
const db = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30s',
  localRetryThreshold: '10s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** Where the stream is: delivering its oldest pending event, or idle until woken or `idleFor` ends. */
export const eventStreamStatusQuery = defineQuery<{ stage: string; waitingFor: string | null }>('eventStreamStatus');

export async function deliverEventStream(
  input: DeliverEventStreamInput,
): Promise<{ delivered: number; failed: number }> {
  // The signal-with-start of the dispatcher, or anything a start from outside (the Web UI) hands it: a malformed
  // timing threw in msOf below, failing the workflow task for ever; it fails the run at once instead.
  const problems = deliverEventStreamInputProblems(input);
  if (problems.length)
    throw codedFailure(FailureCode.INVALID_INPUT, `invalid deliverEventStream input: ${problems.join('; ')}`, {
      details: { problems },
    });
  const policy = input.policy ?? {};
  const sender = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    scheduleToCloseTimeout: msOf(policy.retryFor ?? '24h'),
    retry: {
      initialInterval: msOf(policy.initialInterval ?? '1s'),
      backoffCoefficient: 2,
      maximumInterval: msOf(policy.maximumInterval ?? '10m'),
    },
  });
  let woken = false;
  setHandler(eventsPendingSignal, () => {
    woken = true;
  });
  const totals = { delivered: 0, failed: 0 };
  const status: { stage: string; waitingFor: string | null } = { stage: 'delivering', waitingFor: null };
  setHandler(eventStreamStatusQuery, () => status);
  const show = (stage: string, waitingFor: string | null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    setCurrentDetails(
      `**${stage}** — events of \`${input.stream || '(parent)'}\` to subscription \`${input.subscriptionId}\`, ` +
        `oldest first (delivered ${totals.delivered}, failed ${totals.failed})` +
        (waitingFor ? `\n\nwaiting: ${waitingFor}` : ''),
    );
  };
  for (;;) {
    woken = false;
    show('delivering', 'the receiver to answer 2xx (retried with backoff, Retry-After honoured)');
    const next = await db.nextStreamDelivery({ subscriptionId: input.subscriptionId, stream: input.stream });
    if (!next) {
      show('idle', `a new event for this stream, up to ${policy.idleFor ?? '1m'}`);
      if (woken) continue;
      if (await condition(() => woken, msOf(policy.idleFor ?? '1m'))) continue;
      return totals;
    }
    try {
      await sender.sendEventDelivery({ deliveryId: next.deliveryId });
      totals.delivered += 1;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      await db.failEventDelivery({ deliveryId: next.deliveryId });
      totals.failed += 1;
    }
    if (totals.delivered + totals.failed >= 500 || workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof deliverEventStream>(input);
  }
}
