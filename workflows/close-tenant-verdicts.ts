import { condition } from '@temporalio/workflow';
import type { CloseTransferVerdict } from '../src/domain/operator-decisions.js';
import { lifecycleWorkflowId } from '../src/domain/ids.js';
import { approvalCheck } from './approval-gate.js';
import type { CloseStatus } from './close-tenant-messages.js';

type Queued = CloseTransferVerdict & { seq: number };

/**
 * The operator's verdicts on the transfers a close could not reconcile (the resolveTransfer Update):
 * each checked against its approval (approval-gate.ts), then queued in arrival order for the close to
 * apply; the handler answers once its verdict is applied, with the transfer's state after it. While a
 * verdict on a transfer is checked or queued, that transfer takes no other; a refused check leaves the
 * close waiting as it was.
 */
export class CloseVerdicts {
  private readonly queue: Queued[] = [];
  private queued = 0;
  private readonly inFlight = new Set<string>();
  private readonly results = new Map<number, string>();

  constructor(private readonly externalRef: string) {}

  /** Why a verdict on the transfer `purpose` does not apply now; null when it does. */
  refusal(status: CloseStatus, purpose: string): string | null {
    if (status.stage !== 'needs_operator')
      return (
        `${lifecycleWorkflowId('close', this.externalRef)} is not waiting for an operator's ` +
        `verdict (stage ${status.stage})`
      );
    if (!status.openTransfers.some((t) => t.purpose === purpose)) {
      return (
        `purpose: close:${this.externalRef} has no open transfer "${purpose}" (open: ` +
        `${status.openTransfers.map((t) => t.purpose).join(', ') || 'none'})`
      );
    }
    return this.inFlight.has(purpose) ? `a verdict on transfer "${purpose}" is already being applied` : null;
  }

  /** Checks the verdict's approval, queues it, and answers the transfer's state once the close applied it. */
  async take(verdict: CloseTransferVerdict): Promise<string> {
    this.inFlight.add(verdict.purpose);
    try {
      await approvalCheck({ externalRef: this.externalRef, close: true, purpose: verdict.purpose, verdict });
    } catch (error) {
      this.inFlight.delete(verdict.purpose);
      throw error;
    }
    const seq = ++this.queued;
    this.queue.push({ ...verdict, seq });
    await condition(() => this.results.has(seq));
    return this.results.get(seq)!;
  }

  /** A verdict is queued for the close to apply. */
  get waiting(): boolean {
    return this.queue.length > 0;
  }

  /** A verdict is being checked or waits to be applied: the run does not continue as new past it. */
  get pending(): boolean {
    return this.queue.length > 0 || this.inFlight.size > 0;
  }

  /** The next verdict to apply, in arrival order. */
  next(): Queued | undefined {
    return this.queue.shift();
  }

  /** The close applied a verdict: the transfer's state after it answers the verdict's handler. */
  applied(verdict: Queued, transferState: string): void {
    this.inFlight.delete(verdict.purpose);
    this.results.set(verdict.seq, transferState);
  }
}
