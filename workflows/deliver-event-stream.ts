/**
 * deliverEventStream — why: a receiver must see a tenant's events in the order they happened, and a
 * slow or dead receiver must hold back nobody else. So there is one workflow per (subscription,
 * tenant) stream (id `event-stream:<subscription>:<tenant>`), woken by the dispatcher:
 *
 *   nextStreamDelivery (oldest pending, by the stream's seq) ─► sendEventDelivery (retried with
 *   backoff, Retry-After honoured, for `retryFor`) ─► delivered | failEventDelivery ─► next
 *   nothing pending ─► wait for `eventsPending` up to `idleFor` ─► end (the next event starts it again)
 *
 * The run's state is one `Stream` object (as closeTenant's `Close`): its handlers one line each, the flow `run()`.
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
  return new Stream(input).run();
}

type StreamPolicy = NonNullable<DeliverEventStreamInput['policy']>;

/** One stream's run: its totals, whether it was woken, and its delivery loop. */
class Stream {
  private readonly policy: StreamPolicy;
  private readonly sender: ReturnType<typeof proxyActivities<Activities>>;
  private readonly totals = { delivered: 0, failed: 0 };
  private readonly status: { stage: string; waitingFor: string | null } = { stage: 'delivering', waitingFor: null };
  private woken = false;

  constructor(private readonly input: DeliverEventStreamInput) {
    const policy = (this.policy = input.policy ?? {});
    this.sender = proxyActivities<Activities>({
      startToCloseTimeout: '30s',
      scheduleToCloseTimeout: msOf(policy.retryFor ?? '24h'),
      retry: {
        initialInterval: msOf(policy.initialInterval ?? '1s'),
        backoffCoefficient: 2,
        maximumInterval: msOf(policy.maximumInterval ?? '10m'),
      },
    });
    setHandler(eventsPendingSignal, () => this.wake());
    setHandler(eventStreamStatusQuery, () => this.status);
  }

  /** The oldest pending event delivered or failed, one after another; idle up to `idleFor`, then the end. */
  async run(): Promise<{ delivered: number; failed: number }> {
    const { input, policy, totals } = this;
    for (;;) {
      this.woken = false;
      this.show('delivering', 'the receiver to answer 2xx (retried with backoff, Retry-After honoured)');
      const next = await db.nextStreamDelivery({ subscriptionId: input.subscriptionId, stream: input.stream });
      if (!next) {
        this.show('idle', `a new event for this stream, up to ${policy.idleFor ?? '1m'}`);
        if (this.woken) continue;
        if (await condition(() => this.woken, msOf(policy.idleFor ?? '1m'))) continue;
        return totals;
      }
      await this.deliver(next.deliveryId);
      if (totals.delivered + totals.failed >= 500 || workflowInfo().continueAsNewSuggested)
        await continueAsNew<typeof deliverEventStream>(input);
    }
  }

  /** One delivery sent (retried by its policy); given up on once the policy is spent. */
  private async deliver(deliveryId: string): Promise<void> {
    try {
      await this.sender.sendEventDelivery({ deliveryId });
      this.totals.delivered += 1;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      await db.failEventDelivery({ deliveryId });
      this.totals.failed += 1;
    }
  }

  private wake(): void {
    this.woken = true;
  }

  private show(stage: string, waitingFor: string | null): void {
    const { status, totals, input } = this;
    status.stage = stage;
    status.waitingFor = waitingFor;
    setCurrentDetails(
      `**${stage}** — events of \`${input.stream || '(parent)'}\` to subscription \`${input.subscriptionId}\`, ` +
        `oldest first (delivered ${totals.delivered}, failed ${totals.failed})` +
        (waitingFor ? `\n\nwaiting: ${waitingFor}` : ''),
    );
  }
}
