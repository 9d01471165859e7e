/**
 * autoTopUpSweep — why: tenants with a funding policy must not run dry, and a fleet-wide sweep
 * must neither flood the platform nor top anyone up twice or past a cap.
 *
 *   parent short for every amount? ─► stop (one visible state until `tenantctl parent-funded`)
 *   page of policy tenants ─► read each wallet (platform queue: the fleet's server-side rate limit)
 *     ─► below `below`: child fundTenant (kind auto, to `to`; caps reserved in its first step),
 *        unless the parent was refused that amount or less (INSUFFICIENT_BALANCE): then it waits
 *   ─► next page by continue-as-new
 *
 * A top-up it starts is a fundTenant like any other (abandoned on close: it settles on its own).
 * Its key comes from the read's time and its reservation refuses a stale read, so racing sweeps
 * cannot double a top-up; the caps bound everything else.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  continueAsNew,
  ParentClosePolicy,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { AutoTopUpSweepInput } from '../src/domain/funding-policy-input.js';
import { topUpWorkflowId } from '../src/domain/ids.js';
import { platformTaskQueue } from '../src/domain/ids.js';
import { fundTenant } from './fund-tenant.js';
import { validateWorkflowInput } from './validate-input.js';

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

  const page = await db.listAutoTopUpPage({ after: input.after, limit: input.pageSize });
  if (page.parentInsufficientSince) {
    show(
      `stopped: the parent's own balance is insufficient (since ` +
        `${page.parentInsufficientSince}); fund the parent, then \`tenantctl ` +
        `parent-funded --operator <you> --reason "..."\``,
    );
    return { ...totals, stoppedBy: 'parent_insufficient' };
  }
  const refused = page.parentRefusedMicroUsd ? BigInt(page.parentRefusedMicroUsd) : null;
  show(
    `sweeping after ${input.after ?? '(start)'}` +
      (refused === null
        ? ''
        : ` (the parent was refused ${refused} micro-USD: top-ups of that much or more wait for its funds)`),
  );
  await Promise.all(
    page.tenants.map(async (tenant) => {
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
    }),
  );
  if (page.tenants.length === input.pageSize) {
    await continueAsNew<typeof autoTopUpSweep>({
      ...rawInput,
      after: page.tenants[page.tenants.length - 1]!.externalRef,
      totals,
    });
  }
  show('done');
  return { ...totals, stoppedBy: null };
}
