/**
 * One rule for every wait of every workflow: visible, bounded, decidable.
 *
 * - Visible: a run that waits says so through `currentWaitQuery` (the gateway's run and tenant views read
 *   it for every running run, so `status`, `--wait` and the Web UI need no per-workflow code), in its
 *   Web UI current details, and — where a tenant is concerned — in its `TenantStatus` search attribute,
 *   set when the wait starts and when it ends (never per poll, so a long wait adds no events).
 * - Bounded: a poll backs off from its interval to a ceiling (`Backoff`), and a run that has waited long
 *   continues as new, carrying its state, when the SDK suggests it or its history passes
 *   `HISTORY_EVENT_BOUND` (`historyFull`). A decision sent to the workflow id lands on whichever run is
 *   current.
 * - Decidable: `decisions` lists the Updates that apply now; their validators refuse the others.
 */
import {
  allHandlersFinished,
  condition,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { backoffDelayMs } from '../src/domain/poll-backoff.js';
import { tenantStatusKey } from '../src/domain/search-attributes.js';
import { currentWaitQuery, type WaitView } from './waits-messages.js';

export { currentWaitQuery, type WaitView };

/**
 * Past this many events a waiting run continues as new (Temporal's hard limit is 51,200, and the SDK
 * suggests continuing as new well before that). Workflows take a lower bound as an input option so
 * tests can drive thousands of polls through several continuations in seconds.
 */
export const HISTORY_EVENT_BOUND = 10_000;

/** Whether the run should continue as new at its next safe point. */
export function historyFull(bound: number = HISTORY_EVENT_BOUND): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= bound;
}

/**
 * Waits for every Update and signal handler to finish, so no decision is cut off by the continuation;
 * the caller then returns `continueAsNew(...)` with its carried state.
 */
export async function handlersFinished(): Promise<void> {
  await condition(allHandlersFinished);
}

/** The default ceiling of a backing-off poll: a wait of weeks polls a few hundred times a day at most. */
export const POLL_CEILING_MS = 5 * 60_000;

/**
 * A poll interval that starts at `baseMs` for `steady` polls, then grows by half each poll up to
 * `ceilingMs` (never below `baseMs`). Its count is part of the state a continuation carries.
 */
export class Backoff {
  constructor(
    readonly baseMs: number,
    readonly ceilingMs: number = POLL_CEILING_MS,
    public polls = 0,
    private readonly steady = 10,
  ) {}

  /** The interval before the next poll (and counts this poll). */
  next(): number {
    this.polls += 1;
    return backoffDelayMs(this.baseMs, this.ceilingMs, this.polls, this.steady);
  }

  /** Back to the base interval (something changed: look closely again). */
  reset(): void {
    this.polls = 0;
  }
}

export interface WaitsOptions {
  /** The TenantStatus value for a stage, for workflows about one tenant (omit: the attribute is not set). */
  tenantStatus?: (stage: string) => string;
  /** Extra lines for the Web UI's current details (the run's own summary), shown under the wait. */
  details?: () => string[];
}

/**
 * The wait a run is in. `enter` when a wait starts or what it waits for changes, `leave` when it ends.
 * The search attribute is upserted only when the stage changes.
 */
export class Waits {
  current: WaitView | null;
  private attributeStage: string | null = null;
  /** Attributes that go out with the next TenantStatus upsert, in its one command (`withNextStatus`). */
  private pending: SearchAttributeUpdatePair[] = [];

  constructor(
    private readonly options: WaitsOptions = {},
    /** A wait carried over from the previous run (continue-as-new). */
    carried: WaitView | null = null,
  ) {
    this.current = carried;
    this.install();
    if (carried) this.publish();
  }

  private install(): void {
    // Installed once per run, with the query the gateway reads.
    setHandler(currentWaitQuery, () => this.current);
  }

  enter(stage: string, waitingFor: string, decisions: readonly string[] = [], nextCheckInMs: number | null = null) {
    const now = Date.now();
    const since = this.current && this.current.stage === stage ? this.current.since : new Date(now).toISOString();
    this.current = {
      stage,
      waitingFor,
      since,
      decisions: [...decisions],
      nextCheckAt: nextCheckInMs === null ? null : new Date(now + nextCheckInMs).toISOString(),
    };
    this.publish();
  }

  /** The wait is over; `stage` (when given) is the TenantStatus the run moves on with. */
  leave(stage?: string): void {
    this.current = null;
    if (stage !== undefined) this.setAttribute(stage);
    this.publish();
  }

  /**
   * Sets `pairs` with the next TenantStatus upsert instead of in a command of their own (each upsert is an event
   * and a visibility write). The caller sets a stage in the same activation, so nothing waits on them.
   */
  withNextStatus(pairs: SearchAttributeUpdatePair[]): void {
    this.pending.push(...pairs);
  }

  /** Shows the run's details again (its own summary changed; the wait did not). */
  refresh(): void {
    this.publish();
  }

  private publish(): void {
    if (this.current) this.setAttribute(this.current.stage);
    const lines: string[] = [];
    if (this.current) {
      lines.push(`**waiting** (${this.current.stage}): ${this.current.waitingFor}`);
      lines.push(
        `since ${this.current.since}${this.current.nextCheckAt ? `, next look ${this.current.nextCheckAt}` : ''}`,
      );
      if (this.current.decisions.length > 0) lines.push(`decisions that apply: ${this.current.decisions.join(', ')}`);
    }
    lines.push(...(this.options.details?.() ?? []));
    setCurrentDetails(lines.join('\n\n'));
  }

  private setAttribute(stage: string): void {
    if (!this.options.tenantStatus || this.attributeStage === stage) return;
    this.attributeStage = stage;
    upsertSearchAttributes([
      ...this.pending.splice(0),
      { key: tenantStatusKey, value: this.options.tenantStatus(stage) },
    ]);
  }
}
