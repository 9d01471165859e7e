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
 * The loop owns the order of the steps and the operator decisions on them (TransferWaits: the
 * parentFunded and resolveTransfer Updates, one handler each for both workflows); each workflow owns
 * its status and its wording, and hands them in.
 *
 * Its waits follow the rule of workflows/waits.ts: each one is shown through `currentWait` with the
 * decisions that apply (waiting_for_parent_funds: parentFunded; reconciling_transfer: none;
 * needs_operator: resolveTransfer, none while a verdict is checked against its approval); the
 * balance retry and the reconcile poll back off to the ceiling; past the history bound (or when the
 * SDK suggests it) the loop ends a round with `continue` and what the next run needs to go on: the
 * wait (its `since` kept) and the polls. The transfer intent is the workflow's to carry (its
 * external ref and purpose): the next run's first step is the same fundWallet call under the same
 * intent, which retries or reconciles under the intent's key and never makes a second transfer
 * (activities/wallet.ts). A run continues only between rounds or while it waits for a verdict with
 * none being checked, so no decision is ever half taken.
 */
import {
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  patched,
  proxyLocalActivities,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities/index.js';
import type { FundWalletResult } from '../activities/wallet.js';
import {
  checkDecisionBy,
  checkTransferVerdict,
  type DecisionAnswer,
  type DecisionBy,
  type TransferVerdict,
} from '../src/domain/operator-decisions.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { databaseStep } from './activity-policies.js';
import { approvalCheck } from './approval-gate.js';
import { installDecision } from './decision-table.js';
import { parentFundedUpdate, resolveTransferUpdate } from './transfer-loop-messages.js';
import { msOf } from './validate-input.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from './waits.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export interface TransferTimings {
  balanceRetryInterval: Duration;
  unknownTransferDeadline: Duration;
  reconcileInterval: Duration;
  /** The ceiling the balance retry and the reconcile poll back off to (ms); undefined: the default. */
  pollCeilingMs: number | undefined;
  /** Past this many events the run continues as new; undefined: HISTORY_EVENT_BOUND. */
  historyEventBound: number | undefined;
}

export interface TransferOptions {
  balanceRetryInterval?: Duration;
  unknownTransferDeadline?: Duration;
  reconcileInterval?: Duration;
  pollCeiling?: Duration;
  historyEventBound?: number;
}

export function transferTimings(options?: TransferOptions): TransferTimings {
  return {
    balanceRetryInterval: options?.balanceRetryInterval ?? '10m',
    unknownTransferDeadline: options?.unknownTransferDeadline ?? '15m',
    reconcileInterval: options?.reconcileInterval ?? '30s',
    pollCeilingMs: options?.pollCeiling === undefined ? undefined : msOf(options.pollCeiling),
    historyEventBound: options?.historyEventBound,
  };
}

/** A transfer state as the records hold it (fundWallet's answer, or the row after a marking step). */
export type TransferState = FundWalletResult | Awaited<ReturnType<Activities['markTransferNeedsOperator']>>;

export type WaitingStage = 'waiting_for_parent_funds' | 'reconciling_transfer' | 'needs_operator';

/** What the loop hands to the next run when it continues as new (the workflow adds the intent). */
export interface TransferCarried {
  /** The wait the run was in (its `since` is kept), or null. */
  wait: WaitView | null;
  /** How far each poll has backed off. */
  polls: { funds: number; reconcile: number };
}

/**
 * The state a run continued as new was handed, or undefined for a run that did not continue. Only a
 * run that continued takes it: a start that sets it (the Web UI) could otherwise skip the intent's
 * recording (and its caps) and name a transfer of its own.
 */
export function carriedState<T>(continued: Record<string, unknown> | undefined): T | undefined {
  if (continued === undefined) return undefined;
  if (!workflowInfo().continuedFromExecutionRunId)
    throw codedFailure(
      FailureCode.INVALID_INPUT,
      'continued: is set only by the workflow itself when it continues as new; leave it out',
    );
  return continued as unknown as T;
}

/**
 * Fewer events than this and a run never continues as new (a run that was just continued, with the
 * SDK still suggesting it, would otherwise continue again at once, for ever).
 */
const MIN_EVENTS_BEFORE_CONTINUING = 100;

/** What the decisions need to know of the run that holds the loop. */
export interface TransferRun {
  /** The run's workflow id, named in a refusal. */
  workflowId: string;
  externalRef: string;
  /** The run's stage, for refusals and answers. */
  stage(): string;
  /** The transfer's state after a verdict, for its answer. */
  transferState(): string;
}

/**
 * What a run that moves money waits for from an operator (parentFunded, resolveTransfer), and whether
 * it waits for it right now: a decision that does not apply is refused by the validators. `view` is the
 * run's wait as every surface shows it (the `currentWait` query). One per run; `install` sets the two
 * Update handlers (transfer-loop-messages.ts), each a line calling a method here.
 */
export class TransferWaits {
  readonly view: Waits;
  /** How far each poll had backed off when the run before continued as new. */
  readonly carriedPolls: TransferCarried['polls'];
  private forFunds: boolean;
  private forVerdict: boolean;
  private verdictsApplied = 0;
  private parentFunded = false;
  private verdict: TransferVerdict | undefined;
  /** A verdict is being checked against its approval: no other is taken meanwhile. */
  private checking = false;
  private verdictWaitingFor: string;

  constructor(
    private readonly options: {
      /** The run's own summary lines for the Web UI's current details, under the wait. */
      details?: () => string[];
      carried?: TransferCarried;
      historyEventBound?: number;
    } = {},
  ) {
    // A continued run was in this wait: its decision applies from the start, before the first call answers
    // (parentFunded: that call is the retry; resolveTransfer: the call finds the transfer still in needs_operator).
    const carriedWait = options.carried?.wait ?? null;
    this.forFunds = carriedWait?.stage === 'waiting_for_parent_funds';
    this.forVerdict = carriedWait?.stage === 'needs_operator';
    this.verdictWaitingFor = this.forVerdict ? carriedWait!.waitingFor : '';
    this.view = new Waits({ details: options.details }, carriedWait);
    this.carriedPolls = options.carried?.polls ?? { funds: 0, reconcile: 0 };
  }

  /** Sets the parentFunded and resolveTransfer Update handlers of the run. */
  install(run: TransferRun): void {
    installDecision<DecisionBy>({
      update: parentFundedUpdate,
      check: checkDecisionBy,
      refusal: () => this.parentFundedRefusal(run),
      take: (by) => this.takeParentFunded(run, by),
    });
    installDecision<TransferVerdict>({
      update: resolveTransferUpdate,
      check: checkTransferVerdict,
      refusal: () => this.verdictRefusal(run),
      take: (verdict) => this.takeVerdict(run, verdict),
    });
  }

  /** Whether the run should continue as new at its next safe point. */
  full(): boolean {
    return workflowInfo().historyLength >= MIN_EVENTS_BEFORE_CONTINUING && historyFull(this.options.historyEventBound);
  }

  /** True when parentFunded ended the wait, false when the retry interval did. */
  async waitForParentFunds(intervalMs: number): Promise<boolean> {
    this.parentFunded = false;
    this.forFunds = true;
    const decided = await condition(() => this.parentFunded, intervalMs);
    this.forFunds = false;
    return decided;
  }

  /** The verdict, or undefined when the run should continue as new first (no verdict is in flight). */
  async waitForVerdict(waitingFor: string): Promise<TransferVerdict | undefined> {
    this.verdictWaitingFor = waitingFor;
    this.view.enter('needs_operator', waitingFor, ['resolveTransfer']);
    this.forVerdict = true;
    await condition(() => this.verdict !== undefined || (!this.checking && this.full()));
    this.forVerdict = false;
    const taken = this.verdict;
    this.verdict = undefined;
    return taken;
  }

  /** The loop recorded the verdict it took: its handler answers. */
  verdictApplied(): void {
    this.verdictsApplied += 1;
  }

  /** A call answered: a carried wait's decision no longer applies until the loop waits again. */
  answered(state: FundWalletResult['state']): void {
    this.forFunds = false;
    if (state !== 'needs_operator') this.forVerdict = false;
  }

  private parentFundedRefusal(run: TransferRun): string | null {
    return this.forFunds ? null : `${run.workflowId} is not waiting for the parent's funds (stage ${run.stage()})`;
  }

  private takeParentFunded(run: TransferRun, by: DecisionBy): DecisionAnswer {
    this.parentFunded = true;
    log.info('parent funded, retrying the transfer now', {
      externalRef: run.externalRef,
      operator: by.operator,
      reason: by.reason,
    });
    return { stage: run.stage(), effect: 'the transfer is retried now' };
  }

  private verdictRefusal(run: TransferRun): string | null {
    return this.forVerdict && this.verdict === undefined && !this.checking
      ? null
      : `${run.workflowId} has no transfer in needs_operator waiting for a verdict (stage ${run.stage()})`;
  }

  /**
   * Takes a verdict once its approval check passed (approval-gate.ts), and answers once the loop
   * recorded it, with the transfer's state after it. While the check runs no other verdict is taken;
   * a refusal leaves the run waiting as it was and reaches the caller.
   */
  private async takeVerdict(run: TransferRun, verdict: TransferVerdict): Promise<DecisionAnswer> {
    const applied = this.verdictsApplied;
    this.checking = true;
    this.view.enter(
      'needs_operator',
      `a verdict (${verdict.outcome}) by ${verdict.operator} is being checked against the approval policy`,
      [],
    );
    try {
      await approvalCheck({ externalRef: run.externalRef, close: false, verdict });
      this.verdict = verdict;
    } catch (error) {
      if (this.forVerdict) this.view.enter('needs_operator', this.verdictWaitingFor, ['resolveTransfer']);
      throw error;
    } finally {
      this.checking = false;
    }
    await condition(() => this.verdictsApplied > applied);
    const effect =
      verdict.outcome === 'applied'
        ? 'settled as applied: no transfer is sent'
        : 'recorded as not applied: the transfer is sent again now under a fresh idempotency key';
    return { stage: run.stage(), transferState: run.transferState(), effect };
  }
}

/**
 * Continues the run as new with the state it hands on, once every decision handler has answered (none
 * is half taken at the loop's safe points).
 */
export async function continueCarrying<Input extends { continued?: Record<string, unknown> }>(
  rawInput: Input,
  carried: object,
): Promise<never> {
  await handlersFinished();
  return continueAsNew<(input: Input) => Promise<unknown>>({
    ...rawInput,
    continued: carried as Record<string, unknown>,
  });
}

/** The failure's type: its own, or its cause's (an activity failure carries the activity's). */
export function failureType(error: unknown): string | null {
  const failure = error instanceof ApplicationFailure ? error : (error as { cause?: unknown } | null)?.cause;
  return failure instanceof ApplicationFailure ? (failure.type ?? null) : null;
}

/** The change that keeps a funding wait's stage (and TenantStatus) across its polls (see runTransferLoop). */
export const FUNDING_WAIT_STAGE_PATCH = 'funding-wait-stage-per-wait';

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
  | { state: 'stopped' }
  /** The run should continue as new, carrying this (and the transfer intent) to the next. */
  | { state: 'continue'; carried: TransferCarried };

export async function runTransferLoop(loop: TransferLoop): Promise<TransferLoopEnd> {
  const { externalRef, purpose, timings, waits } = loop;
  const { view } = waits;
  const funds = new Backoff(msOf(timings.balanceRetryInterval), timings.pollCeilingMs, waits.carriedPolls.funds);
  const reconcile = new Backoff(msOf(timings.reconcileInterval), timings.pollCeilingMs, waits.carriedPolls.reconcile);
  /** The next interval of a poll; a poll starts from its base when its wait starts. */
  const nextPoll = (stage: WaitingStage, backoff: Backoff) => {
    if (view.current?.stage !== stage) backoff.reset();
    return backoff.next();
  };
  const carry = (): TransferLoopEnd => ({
    state: 'continue',
    carried: { wait: view.current, polls: { funds: funds.polls, reconcile: reconcile.polls } },
  });
  for (;;) {
    const outcome = await loop.send();
    waits.answered(outcome.state);
    loop.note(outcome);
    switch (outcome.state) {
      case 'succeeded':
      case 'failed':
        view.leave();
        return outcome;
      case 'insufficient_balance': {
        if ((await loop.onInsufficientBalance?.()) === 'stop') {
          view.leave();
          return { state: 'stopped' };
        }
        const waitMs = nextPoll('waiting_for_parent_funds', funds);
        const waitingFor =
          `the parent's paid balance does not cover ${loop.amountMicroUsd} micro-USD: once funded, ` +
          `\`${loop.hints.parentFunded}\` ` +
          `(update parentFunded; retrying by itself, every ${timings.balanceRetryInterval} backing off)`;
        loop.show('waiting_for_parent_funds', waitingFor);
        view.enter('waiting_for_parent_funds', waitingFor, ['parentFunded'], waitMs);
        // A decision ends the wait; the retry interval only pauses it (the next answer decides).
        if (await waits.waitForParentFunds(waitMs)) view.leave();
        break;
      }
      case 'unknown': {
        const deadline = Date.parse(outcome.unknownSince) + msOf(timings.unknownTransferDeadline);
        // The tenant's record gone under the run (a restore): no deadline, the run waits for the runbook's import.
        if (Date.now() >= deadline && !outcome.recordsMissing) {
          loop.note(await steps.markTransferNeedsOperator({ externalRef, purpose }));
          break;
        }
        // Backing off, but never past the deadline: an operator is asked on time.
        const poll = nextPoll('reconciling_transfer', reconcile);
        const waitMs = outcome.recordsMissing ? poll : Math.max(1, Math.min(poll, deadline - Date.now()));
        const waitingFor = outcome.recordsMissing
          ? `${outcome.recordsMissing}; asking again every ${timings.reconcileInterval} backing off ` +
            `(same idempotency key)`
          : `the transfer's outcome is unknown: reconciling every ${timings.reconcileInterval} backing off ` +
            `(same idempotency key) until ${new Date(deadline).toISOString()}`;
        loop.show('reconciling_transfer', waitingFor);
        view.enter('reconciling_transfer', waitingFor, [], waitMs);
        await sleep(waitMs);
        break;
      }
      case 'needs_operator': {
        const waitingFor =
          `the transfer could not be reconciled: check the wallet, then \`${loop.hints.resolveTransfer}\` ` +
          `(update resolveTransfer)`;
        loop.show('needs_operator', waitingFor);
        const verdict = await waits.waitForVerdict(waitingFor);
        if (!verdict) return carry();
        loop.note(await steps.resolveTransferByOperator({ externalRef, purpose, ...verdict }));
        view.leave();
        waits.verdictApplied();
        break;
      }
    }
    if (waits.full()) return carry();
    // A poll of a wait that goes on leaves the run in that wait: its stage and TenantStatus change when the wait
    // starts and ends, never per poll (each poll moved them to the transfer stage and back, two search attribute
    // upserts a poll: issue 35's one rule). Runs started before this change keep moving them (patched).
    if (view.current && patched(FUNDING_WAIT_STAGE_PATCH)) continue;
    loop.afterRound();
  }
}
