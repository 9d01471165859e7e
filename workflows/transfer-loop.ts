/**
 * The transfer loop shared by onboarding's funding and fundTenant (top-ups), from workflow code:
 *
 *   fundWallet ─► succeeded | failed                              → returned
 *             ─► insufficient_balance → wait for parentFunded or a slow retry (or the caller stops)
 *             ─► unknown → reconcile under the same key every reconcileInterval; past the deadline,
 *                          needs_operator
 *             ─► needs_operator → wait for the operator's verdict (resolveTransfer), record it
 *             ⟲
 *
 * The loop owns the order of the steps (the same activities in the same order as before it was
 * shared: histories replay); each workflow owns its status, its wording and its decision handlers,
 * and hands them in.
 */
import { condition, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities/index.js';
import type { FundWalletResult } from '../activities/wallet.js';
import type { TransferVerdict } from '../src/domain/operator-decisions.js';
import { databaseStep } from './activity-policies.js';
import { msOf } from './validate-input.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export interface TransferTimings {
  balanceRetryInterval: Duration;
  unknownTransferDeadline: Duration;
  reconcileInterval: Duration;
}

export function transferTimings(options?: Partial<TransferTimings>): TransferTimings {
  return {
    balanceRetryInterval: options?.balanceRetryInterval ?? '10m',
    unknownTransferDeadline: options?.unknownTransferDeadline ?? '15m',
    reconcileInterval: options?.reconcileInterval ?? '30s',
  };
}

/** A transfer state as the records hold it (fundWallet's answer, or the row after a marking step). */
export type TransferState = FundWalletResult | Awaited<ReturnType<Activities['markTransferNeedsOperator']>>;

export type WaitingStage = 'waiting_for_parent_funds' | 'reconciling_transfer' | 'needs_operator';

/**
 * What a run that moves money waits for from an operator (parentFunded, resolveTransfer), and
 * whether it waits for it right now: a decision that does not apply is refused by the handlers.
 */
export function transferWaits() {
  const waiting = { forFunds: false, forVerdict: false, verdictsApplied: 0 };
  let parentFunded = false;
  let verdict: TransferVerdict | undefined;
  let checking = false;
  return {
    waiting,
    /** A verdict arrived (or is being checked against its approval) and is not yet taken by the loop. */
    verdictPending: () => verdict !== undefined || checking,
    parentFundedNow() {
      parentFunded = true;
    },
    /**
     * Takes a verdict: at once without a check (a history from before the approval gate), else once
     * the check passed. While it runs no other verdict is taken; a refusal leaves the run waiting.
     */
    giveVerdict(given: TransferVerdict, check?: Promise<void>): Promise<void> | undefined {
      if (!check) {
        verdict = given;
        return undefined;
      }
      checking = true;
      return check.then(
        () => {
          checking = false;
          verdict = given;
        },
        (error: unknown) => {
          checking = false;
          throw error;
        },
      );
    },
    async waitForParentFunds(interval: Duration) {
      parentFunded = false;
      waiting.forFunds = true;
      await condition(() => parentFunded, interval);
      waiting.forFunds = false;
    },
    async waitForVerdict(): Promise<TransferVerdict> {
      waiting.forVerdict = true;
      await condition(() => verdict !== undefined);
      waiting.forVerdict = false;
      const taken = verdict!;
      verdict = undefined;
      return taken;
    },
    verdictApplied() {
      waiting.verdictsApplied += 1;
    },
  };
}

export type TransferWaits = ReturnType<typeof transferWaits>;

export interface TransferLoop {
  externalRef: string;
  purpose: string;
  amountMicroUsd: string;
  timings: TransferTimings;
  /** The transfer call (the same intent, so the same idempotency key, on every round). */
  send(): Promise<FundWalletResult>;
  /** Each state the transfer reaches, for the run's status. */
  note(state: TransferState): void;
  /** Enters a waiting stage, with what the run waits for. */
  show(stage: WaitingStage, waitingFor: string): void;
  /** After every round that did not end the loop. */
  afterRound(): void;
  /** The operator commands named in the waiting texts. */
  hints: { parentFunded: string; resolveTransfer: string };
  /** Insufficient balance: 'wait' for the parent's funds, or 'stop' the loop (the caller already acted). */
  onInsufficientBalance?(): Promise<'wait' | 'stop'>;
  waits: TransferWaits;
}

export type TransferLoopEnd =
  | Extract<FundWalletResult, { state: 'succeeded' }>
  | Extract<FundWalletResult, { state: 'failed' }>
  | { state: 'stopped' };

export async function runTransferLoop(loop: TransferLoop): Promise<TransferLoopEnd> {
  const { externalRef, purpose, timings } = loop;
  for (;;) {
    const outcome = await loop.send();
    loop.note(outcome);
    switch (outcome.state) {
      case 'succeeded':
      case 'failed':
        return outcome;
      case 'insufficient_balance': {
        if ((await loop.onInsufficientBalance?.()) === 'stop') return { state: 'stopped' };
        loop.show(
          'waiting_for_parent_funds',
          `the parent's paid balance does not cover ${loop.amountMicroUsd} micro-USD: once funded, ` +
            `\`${loop.hints.parentFunded}\` ` +
            `(update parentFunded; retrying every ${timings.balanceRetryInterval})`,
        );
        await loop.waits.waitForParentFunds(timings.balanceRetryInterval);
        break;
      }
      case 'unknown': {
        const deadline = Date.parse(outcome.unknownSince) + msOf(timings.unknownTransferDeadline);
        if (Date.now() >= deadline) {
          loop.note(await steps.markTransferNeedsOperator({ externalRef, purpose }));
          break;
        }
        loop.show(
          'reconciling_transfer',
          `the transfer's outcome is unknown: reconciling every ${timings.reconcileInterval} ` +
            `(same idempotency key) until ${new Date(deadline).toISOString()}`,
        );
        await sleep(timings.reconcileInterval);
        break;
      }
      case 'needs_operator': {
        loop.show(
          'needs_operator',
          `the transfer could not be reconciled: check the wallet, then \`${loop.hints.resolveTransfer}\` ` +
            `(update resolveTransfer)`,
        );
        const verdict = await loop.waits.waitForVerdict();
        loop.note(await steps.resolveTransferByOperator({ externalRef, purpose, ...verdict }));
        loop.waits.verdictApplied();
        break;
      }
    }
    loop.afterRound();
  }
}
