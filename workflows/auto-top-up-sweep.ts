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
  const platform = proxyActivities<Activities>({
    taskQueue: platformTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '30s',
    retry: { initialInterval: '1s', maximumInterval: '1m', maximumAttempts: 5 },
  });
  const totals: AutoTopUpTotals = input.totals
    ? { ...input.totals }
    : { read: 0, belowThreshold: 0, started: 0, unreadable: 0, parentShort: 0 };
  const show = (line: string) =>
    setCurrentDetails(
      `**${line}**\n\nread ${totals.read}, below threshold ${totals.belowThreshold}, ` +
        `top-ups started ${totals.started}, unreadable ${totals.unreadable}` +
        (totals.parentShort ? `, waiting for the parent's funds ${totals.parentShort}` : ''),
    );

  const stopped = (since: string): AutoTopUpSweepResult => {
    show(
      `stopped: the parent's own balance is insufficient (since ${since}); fund the parent, then \`tenantctl ` +
        `parent-funded --reason "..."\``,
    );
    return { ...totals, stoppedBy: 'parent_insufficient' };
  };
  const refusedOf = (page: AutoTopUpPage) => (page.parentRefusedMicroUsd ? BigInt(page.parentRefusedMicroUsd) : null);
  const showSweeping = (after: string | null, refused: bigint | null) =>
    show(
      `sweeping after ${after ?? '(start)'}` +
        (refused === null
          ? ''
          : ` (the parent was refused ${refused} micro-USD: top-ups of that much or more wait for its funds)`),
    );

  /** One policy tenant: its wallet read and, below its threshold, its top-up started (never doubled). */
  async function sweepTenant(tenant: AutoTopUpPage['tenants'][number], refused: bigint | null): Promise<void> {
    const read = await platform
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
            ...(input.options ? { options: input.options } : {}),
          },
        ],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      totals.started += 1;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  let page = await db.listAutoTopUpPage({ after: input.after, limit: input.pageSize });
  if (page.parentInsufficientSince) return stopped(page.parentInsufficientSince);
  let refused = refusedOf(page);
  showSweeping(input.after, refused);
  const continueAfter = (after: string) => continueAsNew<typeof autoTopUpSweep>({ ...rawInput, after, totals });

  if (!patched(SWEEP_PIPELINE_PATCH)) {
    // Before the patch: a run per page, the next run once every read of this page is back.
    await Promise.all(page.tenants.map((tenant) => sweepTenant(tenant, refused)));
    if (page.tenants.length === input.pageSize) await continueAfter(page.tenants[page.tenants.length - 1]!.externalRef);
    show('done');
    return { ...totals, stoppedBy: null };
  }

  // Pipelined: the next page is listed (and its reads queued) once half of this page's reads are back.
  let inFlight = 0;
  let failure: { error: unknown } | null = null;
  const settled = async (until: () => boolean) => {
    await condition(() => failure !== null || until());
    if (failure) throw failure.error;
  };
  const bound = input.historyEventBound ?? SWEEP_HISTORY_EVENT_BOUND;
  for (;;) {
    for (const tenant of page.tenants) {
      inFlight += 1;
      void sweepTenant(tenant, refused)
        .catch((error: unknown) => void (failure ??= { error }))
        .finally(() => void (inFlight -= 1));
    }
    if (page.tenants.length < input.pageSize) break;
    const after = page.tenants[page.tenants.length - 1]!.externalRef;
    if (historyFull(bound)) {
      await settled(() => inFlight === 0);
      await continueAfter(after);
    }
    await settled(() => inFlight <= Math.floor(input.pageSize / 2));
    page = await db.listAutoTopUpPage({ after, limit: input.pageSize });
    if (page.parentInsufficientSince) {
      await settled(() => inFlight === 0);
      return stopped(page.parentInsufficientSince);
    }
    refused = refusedOf(page);
    showSweeping(after, refused);
  }
  await settled(() => inFlight === 0);
  show('done');
  return { ...totals, stoppedBy: null };
}
