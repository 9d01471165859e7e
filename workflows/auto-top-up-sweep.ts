/**
 * autoTopUpSweep — why: tenants with a funding policy must not run dry, and a fleet-wide sweep
 * must neither flood the platform nor top anyone up twice or past a cap.
 *
 *   parent short for every amount? ─► stop (one visible state until `tenantctl parent-funded`)
 *   page of policy tenants ─► read each wallet (platform queue: the fleet's server-side rate limit)
 *     ─► below `below`: child fundTenant (kind auto, to `to`; caps reserved in its first step),
 *        unless the parent was refused that amount or less (INSUFFICIENT_BALANCE): then it waits
 *   ─► next page listed once half the page's reads are back, so the platform budget never waits for a
 *      page's last reads (SWEEP_PIPELINE_PATCH; before it, a run per page) ─► continue-as-new past the
 *      history bound, after the reads in flight
 *
 * A top-up it starts is a fundTenant like any other (abandoned on close: it settles on its own).
 * Its key comes from the read's time and its reservation refuses a stale read, so racing sweeps
 * cannot double a top-up; the caps bound everything else.
 *
 * The run's state is one `Sweep` object (as closeTenant's `Close`): each step a method, the flow `run()`.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  condition,
  continueAsNew,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { AutoTopUpPage } from '../activities/auto-top-up.js';
import type { AutoTopUpSweepInput } from '../src/domain/funding-policy-input.js';
import { topUpWorkflowId } from '../src/domain/ids.js';
import { platformTaskQueue } from '../src/domain/ids.js';
import { fundTenant } from './fund-tenant.js';
import type { ParsedWorkflowInput } from '../activities/input-validation.js';
import { validateWorkflowInput } from './validate-input.js';
import { historyFull } from './waits.js';

/** Pages pipelined in one run, continued as new past the history bound (not a run per page). */
export const SWEEP_PIPELINE_PATCH = 'auto-top-up-sweep-pipelined-pages';
/** A run's history bound: about 500 tenants' reads and top-ups, as a page of the other fleet runs. */
export const SWEEP_HISTORY_EVENT_BOUND = 4_000;

export interface AutoTopUpTotals {
  read: number;
  belowThreshold: number;
  started: number;
  unreadable: number;
  /** Top-ups not started: the parent was refused that amount or less (absent in older runs). */
  parentShort?: number;
}
export interface AutoTopUpSweepResult extends AutoTopUpTotals {
  stoppedBy: 'parent_insufficient' | null;
}

const db = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', maximumInterval: '30s', maximumAttempts: 50 },
});

export async function autoTopUpSweep(rawInput: AutoTopUpSweepInput): Promise<AutoTopUpSweepResult> {
  const input = await validateWorkflowInput('autoTopUpSweep', rawInput, () => null);
  return new Sweep(rawInput, input).run();
}

type PolicyTenant = AutoTopUpPage['tenants'][number];

/** One sweep run: its totals, the reads in flight, and each step as a method. */
class Sweep {
  private readonly platform: ReturnType<typeof proxyActivities<Activities>>;
  private readonly totals: AutoTopUpTotals;
  private inFlight = 0;
  /** The first tenant's failure (after its retries): the run fails with it once it is seen. */
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly rawInput: AutoTopUpSweepInput,
    private readonly input: ParsedWorkflowInput<'autoTopUpSweep'>,
  ) {
    this.platform = proxyActivities<Activities>({
      taskQueue: platformTaskQueue(workflowInfo().taskQueue),
      startToCloseTimeout: '30s',
      retry: { initialInterval: '1s', maximumInterval: '1m', maximumAttempts: 5 },
    });
    this.totals = input.totals
      ? { ...input.totals }
      : { read: 0, belowThreshold: 0, started: 0, unreadable: 0, parentShort: 0 };
  }

  /** The flow: the first page, then (pipelined) each next page until the last or the history bound. */
  async run(): Promise<AutoTopUpSweepResult> {
    const { input } = this;
    let page = await db.listAutoTopUpPage({ after: input.after, limit: input.pageSize });
    if (page.parentInsufficientSince) return this.stopped(page.parentInsufficientSince);
    let refused = refusedOf(page);
    this.showSweeping(input.after, refused);
    if (!patched(SWEEP_PIPELINE_PATCH)) return this.runPerPage(page, refused);

    // Pipelined: the next page is listed (and its reads queued) once half of this page's reads are back.
    const bound = input.historyEventBound ?? SWEEP_HISTORY_EVENT_BOUND;
    for (;;) {
      for (const tenant of page.tenants) this.startTenant(tenant, refused);
      if (page.tenants.length < input.pageSize) break;
      const after = page.tenants[page.tenants.length - 1]!.externalRef;
      if (historyFull(bound)) {
        await this.settled(() => this.inFlight === 0);
        await this.continueAfter(after);
      }
      await this.settled(() => this.inFlight <= Math.floor(input.pageSize / 2));
      page = await db.listAutoTopUpPage({ after, limit: input.pageSize });
      if (page.parentInsufficientSince) {
        await this.settled(() => this.inFlight === 0);
        return this.stopped(page.parentInsufficientSince);
      }
      refused = refusedOf(page);
      this.showSweeping(after, refused);
    }
    await this.settled(() => this.inFlight === 0);
    this.show('done');
    return { ...this.totals, stoppedBy: null };
  }

  /** Before SWEEP_PIPELINE_PATCH: a run per page, the next run once every read of this page is back. */
  private async runPerPage(page: AutoTopUpPage, refused: bigint | null): Promise<AutoTopUpSweepResult> {
    await Promise.all(page.tenants.map((tenant) => this.sweepTenant(tenant, refused)));
    if (page.tenants.length === this.input.pageSize)
      await this.continueAfter(page.tenants[page.tenants.length - 1]!.externalRef);
    this.show('done');
    return { ...this.totals, stoppedBy: null };
  }

  private startTenant(tenant: PolicyTenant, refused: bigint | null): void {
    this.inFlight += 1;
    void this.sweepTenant(tenant, refused)
      .catch((error: unknown) => void (this.failure ??= { error }))
      .finally(() => void (this.inFlight -= 1));
  }

  /** Until `until` holds; throws the first tenant's failure instead. */
  private async settled(until: () => boolean): Promise<void> {
    await condition(() => this.failure !== null || until());
    if (this.failure) throw this.failure.error;
  }

  private async continueAfter(after: string): Promise<never> {
    return continueAsNew<typeof autoTopUpSweep>({ ...this.rawInput, after, totals: this.totals });
  }

  /** One policy tenant: its wallet read and, below its threshold, its top-up started (never doubled). */
  private async sweepTenant(tenant: PolicyTenant, refused: bigint | null): Promise<void> {
    const { totals } = this;
    const read = await this.platform
      .readWalletForAutoTopUp({ externalRef: tenant.externalRef, subaccountId: tenant.subaccountId })
      .catch(() => null);
    if (!read || read.balanceMicroUsd === null) {
      totals.unreadable += 1;
      return;
    }
    totals.read += 1;
    const balance = BigInt(read.balanceMicroUsd);
    if (balance >= BigInt(tenant.below)) return;
    totals.belowThreshold += 1;
    const amount = BigInt(tenant.to) - balance;
    if (refused !== null && amount >= refused) {
      totals.parentShort = (totals.parentShort ?? 0) + 1;
      return;
    }
    const idempotencyKey = `auto-${read.readAt.replace(/[^0-9]/g, '')}`;
    try {
      await startChild(fundTenant, {
        workflowId: topUpWorkflowId(tenant.externalRef, idempotencyKey),
        args: [
          {
            externalRef: tenant.externalRef,
            idempotencyKey,
            amountMicroUsd: amount.toString(),
            kind: 'auto',
            requestedBy: 'auto-top-up',
            reason: `balance ${balance} below ${tenant.below}: up to ${tenant.to}`,
            balanceReadAt: read.readAt,
            ...(this.input.options ? { options: this.input.options } : {}),
          },
        ],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      totals.started += 1;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  private stopped(since: string): AutoTopUpSweepResult {
    this.show(
      `stopped: the parent's own balance is insufficient (since ${since}); fund the parent, then \`tenantctl ` +
        `parent-funded --reason "..."\``,
    );
    return { ...this.totals, stoppedBy: 'parent_insufficient' };
  }

  private showSweeping(after: string | null, refused: bigint | null): void {
    this.show(
      `sweeping after ${after ?? '(start)'}` +
        (refused === null
          ? ''
          : ` (the parent was refused ${refused} micro-USD: top-ups of that much or more wait for its funds)`),
    );
  }

  private show(line: string): void {
    const { totals } = this;
    setCurrentDetails(
      `**${line}**\n\nread ${totals.read}, below threshold ${totals.belowThreshold}, ` +
        `top-ups started ${totals.started}, unreadable ${totals.unreadable}` +
        (totals.parentShort ? `, waiting for the parent's funds ${totals.parentShort}` : ''),
    );
  }
}

function refusedOf(page: AutoTopUpPage): bigint | null {
  return page.parentRefusedMicroUsd ? BigInt(page.parentRefusedMicroUsd) : null;
}
