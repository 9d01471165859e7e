/**
 * closeTenant — why: a closed tenant answers 404 like an absent one, so nothing can be fixed after
 * the close. The close therefore happens only once the tenant is provably empty.
 *
 *   validate ─► [after: suspend now, wait out the window; cancelClose undoes it]
 *            ─► mark closing (blocks onboarding steps, rotations, new keys)
 *            ─► cancel a running onboarding; cancel rotations and wait until they rolled back
 *            ─► resolve unknown transfers (wallet, same key; else needs_operator + the resolveTransfer update)
 *            ─► revoke every key (so workloads stop creating resources) ─► resume if suspended
 *            ─► delete every project, listing again until none remain (404 = done)
 *            ─► verify: zero projects and zero active keys ─► statement ─► read balance, close, record
 *
 * Every step is an ordinary activity (visible per project in the history) and safe to repeat, so a
 * worker killed mid-cleanup resumes where it was. A repeated close is a no-op success.
 *
 * Its waits follow the one rule (workflows/waits.ts, docs/waits.md): each is shown by `currentWait` and
 * the `TenantStatus` attribute (`close:<stage>`), polls back off to `pollCeiling`, and a run past
 * `historyEventBound` (or when the SDK suggests it) continues as new with where it stands (`Carried`):
 * the window's end, what is cleaned up, the poll count, the wait. A decision sent to `close:<ref>` lands
 * on the current run; a run never continues with a decision taken but not yet applied.
 *
 * The run's state is one `Close` object: its handlers are one line each calling a method, each step a
 * method, the flow `run()`; the verdict queue is `CloseVerdicts` (close-tenant-verdicts.ts). Its two decisions
 * are installed by the decision table's installDecision (workflows/decision-table.ts), as every workflow's.
 */
import {
  allHandlersFinished,
  condition,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { LifecycleRequest, LifecycleWorkflowInput } from '../src/domain/tenant-input.js';
import { tenantExternalRefKey, tenantSubaccountIdKey } from '../src/domain/search-attributes.js';
import {
  checkCloseTransferVerdict,
  checkDecisionBy,
  type CloseTransferVerdict,
  type DecisionAnswer,
  type DecisionBy,
} from '../src/domain/operator-decisions.js';
import {
  cancelCloseUpdate,
  closeResolveTransferUpdate,
  closeStatusQuery,
  type CloseStage,
  type CloseStatus,
  type CloseTenantResult,
} from './close-tenant-messages.js';
import { CloseVerdicts } from './close-tenant-verdicts.js';
import { installDecision } from './decision-table.js';
import { recordOutcome } from './outcomes.js';
import { msOf, validateWorkflowInput } from './validate-input.js';
import { lifecycleWorkflowId, onboardingWorkflowId } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { closeDelayMs } from '../src/domain/durations.js';
import { closeCleanup, closeWaitDatabaseStep } from './activity-policies.js';
import { Backoff, HISTORY_EVENT_BOUND, historyFull, Waits, type WaitView } from './waits.js';

export * from './close-tenant-messages.js';

const acts = proxyActivities<Activities>(closeCleanup);
const db = proxyLocalActivities<Activities>(closeWaitDatabaseStep);

const MAX_CLEANUP_ROUNDS = 50;
// A delayed close looks again this often (at most; less when pollCeiling is lower) to refresh the time left.
const WINDOW_REFRESH_MS = 3_600_000;
// Open rotations are polled from this interval while they roll back; past the timeout the close fails.
const ROTATION_POLL_MS = 1_000;
const ROTATIONS_TIMEOUT_MS = 10 * 60_000;
// A run continues this many events before its bound: what it may add after its last safe point (the rest of
// a poll; the last proof of emptiness, the statement and the close) stays within historyEventBound.
const BOUND_HEADROOM_EVENTS = 50;

/** Where a close stands between its waits: what a continued run starts from. */
type Phase = 'window' | 'stopping' | 'transfers' | 'revoking' | 'cleanup';

interface Progress {
  /** null: not yet past the start (no window, or not yet marked closing). */
  phase: Phase | null;
  /** A delayed close: when its window ends (never recomputed from `after` by a continued run). */
  closeAtMs: number | null;
  /** When the rotations cancelled for the close must have rolled back by. */
  rotationsDeadlineMs: number | null;
  /** Since when an unknown transfer has been reconciled without an answer. */
  unknownSince: number | null;
  deleted: number;
}

/** What a run continued as new hands to the next (ids, stages, times: nothing secret). */
interface Carried extends Progress {
  /** The first run's id: the idempotency key of every platform call and of the close schedule. */
  runKey: string;
  startedAtMs: number;
  phase: Phase;
  status: CloseStatus;
  /** The current wait's poll count (its backoff goes on where it was). */
  polls: number;
  wait: WaitView | null;
}

type Request = Omit<LifecycleRequest, 'continued'> & { runKey: string };

function timeLeftOf(ms: number): string {
  const minutes = Math.ceil(ms / 60_000);
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  return days > 0 ? `${days}d ${hours}h` : hours > 0 ? `${hours}h ${minutes % 60}m` : `${Math.max(minutes, 0)}m`;
}

export async function closeTenant(rawInput: LifecycleWorkflowInput): Promise<CloseTenantResult> {
  const input = await validateWorkflowInput('lifecycle', rawInput, (i) => lifecycleWorkflowId('close', i.externalRef));
  return new Close(rawInput, input).run();
}

/** One close run: where it stands, its waits, the decisions it takes, and each step as a method. */
class Close {
  readonly status: CloseStatus;
  private readonly externalRef: string;
  private readonly carried: Carried | undefined;
  private readonly request: Request;
  private readonly startedAtMs: number;
  private readonly progress: Progress;
  private readonly waits: Waits;
  private readonly verdicts: CloseVerdicts;
  private readonly pollMs: number;
  private readonly ceilingMs: number | undefined;
  private readonly unknownDeadlineMs: number;
  /** An operator's cancel of a delayed close: taken, then done once the tenant is back as it was. */
  private readonly cancel: { by?: DecisionBy; done: boolean } = { done: false };
  /** The phase this run continued in: its stage (and wait) go on as they were, not entered anew. */
  private resumeIn: Phase | null;
  /** The carried poll count belongs to the wait of the phase the run continued in. */
  private carriedPolls: number;
  private backoff: Backoff | null = null;

  constructor(
    private readonly rawInput: LifecycleWorkflowInput,
    private readonly input: LifecycleRequest,
  ) {
    const { externalRef, options } = input;
    this.externalRef = externalRef;
    this.carried = input.continued as Carried | undefined;
    const carried = this.carried;
    this.pollMs = msOf(options?.pollInterval ?? '5s');
    this.ceilingMs = options?.pollCeiling === undefined ? undefined : msOf(options.pollCeiling);
    this.unknownDeadlineMs = msOf(options?.unknownTransferDeadline ?? '15m');
    const { continued: _continued, ...plain } = input;
    this.request = { ...plain, runKey: carried?.runKey ?? workflowInfo().firstExecutionRunId };
    this.status = carried?.status ?? {
      externalRef,
      stage: 'closing',
      subaccountId: null,
      keysRevoked: [],
      projects: {},
      rounds: 0,
      openTransfers: [],
      waitingFor: null,
      balanceLeftMicroUsd: null,
    };
    this.startedAtMs = carried?.startedAtMs ?? workflowInfo().startTime.getTime();
    this.progress = {
      phase: carried?.phase ?? null,
      closeAtMs: carried?.closeAtMs ?? null,
      rotationsDeadlineMs: carried?.rotationsDeadlineMs ?? null,
      unknownSince: carried?.unknownSince ?? null,
      deleted: carried?.deleted ?? 0,
    };
    this.resumeIn = carried?.phase ?? null;
    this.carriedPolls = carried?.polls ?? 0;
    this.verdicts = new CloseVerdicts(externalRef);
    this.waits = new Waits(
      { tenantStatus: (stage) => (stage === 'closed' ? 'closed' : `close:${stage}`), details: () => this.summary() },
      carried?.wait ?? null,
    );

    setHandler(closeStatusQuery, () => this.status);
    installDecision<DecisionBy>({
      update: cancelCloseUpdate,
      check: checkDecisionBy,
      refusal: () => this.cancelRefusal(),
      take: (by) => this.takeCancel(by),
    });
    installDecision<CloseTransferVerdict>({
      update: closeResolveTransferUpdate,
      check: checkCloseTransferVerdict,
      refusal: (verdict) => this.verdicts.refusal(this.status, verdict.purpose),
      take: (verdict) => this.takeVerdict(verdict),
    });
    if (carried) {
      // The attribute carries over; set it again for this run's Waits (one event).
      if (!carried.wait) this.waits.leave(this.status.stage);
    } else upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
  }

  async run(): Promise<CloseTenantResult> {
    try {
      const result = await this.steps();
      const { subaccountId, projectsDeleted, keysRevoked } = result;
      recordOutcome('close', result.alreadyClosed ? 'already_closed' : 'closed', this.startedAtMs, {
        externalRef: this.externalRef,
        subaccountId,
        projectsDeleted,
        keysRevoked,
      });
      return result;
    } catch (error) {
      if (error instanceof ContinueAsNew) throw error;
      recordOutcome(
        'close',
        isCancellation(error) ? 'cancelled' : 'failed',
        this.startedAtMs,
        { externalRef: this.externalRef, subaccountId: this.status.subaccountId, stage: this.status.stage },
        'warn',
      );
      throw error;
    }
  }

  /** The flow: each phase once, a continued run from the phase it continued in. */
  private async steps(): Promise<CloseTenantResult> {
    const { progress } = this;
    if (!this.carried) await this.scheduleWindow();
    if (progress.phase === null || progress.phase === 'window') {
      if (progress.phase === 'window') {
        const cancelled = await this.waitOutWindow();
        if (cancelled) return cancelled;
      }
      const closed = await this.begin();
      if (closed) return closed;
    }
    if (progress.phase === 'stopping') {
      await this.waitForRotations();
      progress.phase = 'transfers';
    }
    if (progress.phase === 'transfers') {
      await this.resolveTransfers();
      progress.phase = 'revoking';
    }
    if (progress.phase === 'revoking') {
      await this.revokeKeys();
      if ((await acts.resumeForCleanup(this.request)).resumed) this.move('resuming_for_cleanup');
      progress.phase = 'cleanup';
    }
    await this.deleteProjects();
    return this.closeOnPlatform();
  }

  /** A delayed close (`after`): the tenant suspended now, the window's end recorded. */
  private async scheduleWindow(): Promise<void> {
    // `0` is no duration (msOf threw on it, failing the task for ever): at once, as absent.
    const delayMs = this.input.after ? closeDelayMs(this.input.after) : 0;
    if (delayMs <= 0) return;
    const closeAtMs = Date.now() + delayMs;
    this.status.closeAt = new Date(closeAtMs).toISOString();
    const { subaccountId, windowed } = await acts.scheduleClose({
      ...this.request,
      closeAt: this.status.closeAt,
      after: String(this.input.after),
    });
    this.status.subaccountId = subaccountId;
    // Already closing or closed: no window to wait out, the close goes on (or is a no-op) as before.
    if (windowed) Object.assign(this.progress, { phase: 'window', closeAtMs });
    else this.status.closeAt = null;
  }

  /** Suspended now; closed when the window ends; undone by a cancelClose inside it. */
  private async waitOutWindow(): Promise<CloseTenantResult | null> {
    const { status, cancel } = this;
    this.resumeIn = null;
    const closeAtMs = this.progress.closeAtMs!;
    const refreshMs = Math.min(WINDOW_REFRESH_MS, this.ceilingMs ?? WINDOW_REFRESH_MS);
    for (;;) {
      const left = closeAtMs - Date.now();
      if (cancel.by || left <= 0) break;
      await this.boundHistory();
      if (cancel.by) break;
      status.timeLeft = timeLeftOf(left);
      this.wait(
        'scheduled',
        `the close window, until ${status.closeAt}: \`tenantctl close --cancel ${this.externalRef}\` ` +
          `(update cancelClose) undoes it`,
        ['cancelClose'],
        left,
      );
      await condition(() => cancel.by !== undefined, Math.min(left, refreshMs));
    }
    status.timeLeft = null;
    if (!cancel.by) {
      // From here a cancel is refused: the close goes on.
      this.move('closing');
      await acts.closeWindowEnded({ runKey: this.request.runKey });
      return null;
    }
    await acts.cancelScheduledClose({ externalRef: this.externalRef, runKey: this.request.runKey, ...cancel.by });
    this.move('close_cancelled');
    cancel.done = true;
    return this.result({ status: 'close_cancelled' });
  }

  /** Marks the tenant closing, stops its onboarding and rotations; a result when it is closed already. */
  private async begin(): Promise<CloseTenantResult | null> {
    const begun = await acts.beginClose(this.request);
    this.status.subaccountId = begun.subaccountId;
    upsertSearchAttributes([{ key: tenantSubaccountIdKey, value: begun.subaccountId }]);
    if (begun.alreadyClosed) {
      this.move('closed');
      return this.result({ alreadyClosed: true });
    }
    this.move('stopping_other_work');
    await getExternalWorkflowHandle(onboardingWorkflowId(this.externalRef))
      .cancel()
      .catch(() => undefined);
    // Called AFTER the record says closing (new rotations are refused): cancel every open one.
    const open = await db.listOpenRotationsOfTenant({ externalRef: this.externalRef });
    for (const rotation of open) {
      // Not found or already closed: nothing to cancel; the record is watched below all the same.
      await getExternalWorkflowHandle(rotation.workflowId)
        .cancel()
        .catch(() => undefined);
    }
    this.progress.rotationsDeadlineMs = Date.now() + ROTATIONS_TIMEOUT_MS;
    this.progress.phase = 'stopping';
    return null;
  }

  /**
   * Until every cancelled rotation rolled back (the new key revoked, the old one redeployed, the record
   * `cancelled`; one past revoking its old key just finishes). Either way no extra active key remains.
   * Fails ROTATION_STILL_OPEN (retryable: close again) past its deadline, before anything is cleaned up.
   */
  private async waitForRotations(): Promise<void> {
    const { externalRef } = this;
    this.resumeIn = null;
    const backoff = this.backoffFrom(ROTATION_POLL_MS);
    for (;;) {
      const open = await db.listOpenRotationsOfTenant({ externalRef });
      if (open.length === 0) return;
      const deadline = this.progress.rotationsDeadlineMs!;
      if (Date.now() >= deadline) {
        throw codedFailure(FailureCode.ROTATION_STILL_OPEN, `rotations of ${externalRef} still open`, {
          details: { open },
          retryable: true,
        });
      }
      await this.boundHistory();
      const nextMs = Math.max(1, Math.min(backoff.next(), deadline - Date.now()));
      this.wait(
        'stopping_other_work',
        `the tenant's open rotation(s) ${open.map((r) => r.workflowId).join(', ')} to roll back after their ` +
          `cancel; the close fails with ROTATION_STILL_OPEN at ${new Date(deadline).toISOString()} (close again)`,
        [],
        nextMs,
      );
      await sleep(nextMs);
    }
  }

  /** Until no transfer of the tenant is open: reconciled by itself, else an operator's verdict. */
  private async resolveTransfers(): Promise<void> {
    const { externalRef, status, progress, verdicts } = this;
    this.startPhase('transfers', 'resolving_transfers');
    const backoff = this.backoffFrom(this.pollMs);
    for (;;) {
      await this.boundHistory();
      const open = await acts.reconcileOpenTransfers({ externalRef, subaccountId: status.subaccountId! });
      status.openTransfers = open;
      if (open.length === 0) return;
      const verdict = verdicts.next();
      if (verdict) {
        const { seq: _seq, ...decision } = verdict;
        const after = await acts.resolveTransferByOperator({ externalRef, ...decision });
        verdicts.applied(verdict, after.state);
        continue;
      }
      progress.unknownSince ??= Date.now();
      const askAt = progress.unknownSince + this.unknownDeadlineMs;
      if (open.some((t) => t.state === 'needs_operator') || Date.now() > askAt) {
        for (const t of open.filter((o) => o.state === 'unknown'))
          await acts.markTransferNeedsOperator({ externalRef, purpose: t.purpose });
        this.wait(
          'needs_operator',
          `an operator's verdict on transfer(s) ${open.map((t) => t.purpose).join(', ')}, which could not be ` +
            `reconciled: check the wallet, then \`tenantctl resolve-transfer ${externalRef} --close ` +
            `--purpose <purpose> --outcome applied|not-applied --reason ` +
            `"..."\` (update resolveTransfer)`,
          ['resolveTransfer'],
          null,
        );
        await condition(() => verdicts.waiting);
      } else {
        const nextMs = Math.max(1, Math.min(backoff.next(), askAt - Date.now()));
        this.wait(
          'resolving_transfers',
          `transfer(s) ${open.map((t) => t.purpose).join(', ')} in an unknown state to be reconciled with the ` +
            `wallet (looked at again by itself); an operator is asked from ${new Date(askAt).toISOString()}`,
          [],
          nextMs,
        );
        await sleep(nextMs);
      }
    }
  }

  /** Until the platform lists no active key of the tenant (so workloads stop creating resources). */
  private async revokeKeys(): Promise<void> {
    this.startPhase('revoking', 'revoking_keys');
    const backoff = this.backoffFrom(this.pollMs);
    for (;;) {
      await this.boundHistory();
      const { revoked, stillActive } = await acts.revokeAllTenantKeys({ externalRef: this.externalRef });
      this.status.keysRevoked.push(...revoked);
      if (stillActive === 0) return;
      const nextMs = backoff.next();
      this.wait(
        'revoking_keys',
        `${stillActive} key(s) of the tenant still active on the platform after their revoke (revoked again by itself)`,
        [],
        nextMs,
      );
      await sleep(nextMs);
    }
  }

  /**
   * Deletes every project, listing again until none remain and no key is active (a workload may have
   * raced the revoke). A project deleted but still listed is waited for (backing off), then deleted again;
   * after MAX_CLEANUP_ROUNDS listings the close fails CLEANUP_INCOMPLETE and does not close.
   */
  private async deleteProjects(): Promise<void> {
    const { externalRef, status } = this;
    this.startPhase('cleanup', 'deleting_projects');
    const backoff = this.backoffFrom(this.pollMs);
    for (;;) {
      await this.boundHistory();
      if (++status.rounds > MAX_CLEANUP_ROUNDS) {
        throw codedFailure(
          FailureCode.CLEANUP_INCOMPLETE,
          `tenant ${externalRef} still has resources after ${MAX_CLEANUP_ROUNDS} cleanup rounds; not closing`,
        );
      }
      if (!this.waits.current) this.move('deleting_projects');
      const projects = await acts.listTenantProjects({ externalRef });
      if (projects.length > 0) {
        const stuck = projects.filter((p) => ['deleted', 'already_gone'].includes(status.projects[p.id] ?? ''));
        if (stuck.length > 0) {
          const nextMs = backoff.next();
          this.wait(
            'deleting_projects',
            `project(s) ${stuck.map((p) => p.id).join(', ')} deleted but still listed by the platform: deleted ` +
              `again by itself; the close gives up (CLEANUP_INCOMPLETE, not closed) after ` +
              `${MAX_CLEANUP_ROUNDS} rounds (round ${status.rounds})`,
            [],
            nextMs,
          );
          await sleep(nextMs);
        } else this.move('deleting_projects');
        for (const project of projects) {
          const seen = status.projects[project.id];
          status.projects[project.id] = 'deleting';
          if (!this.waits.current) this.move('deleting_projects');
          const { deleted: gone } = await acts.deleteTenantProject({ externalRef, projectId: project.id });
          // A project deleted again (it was still listed) counts once.
          status.projects[project.id] = gone || seen === 'deleted' ? 'deleted' : 'already_gone';
          if (gone && seen !== 'deleted') this.progress.deleted++;
        }
        continue;
      }
      // Empty once; prove it again together with the keys (a workload may have raced the revoke).
      this.move('verifying_empty');
      const keys = await acts.revokeAllTenantKeys({ externalRef });
      status.keysRevoked.push(...keys.revoked);
      const again = await acts.listTenantProjects({ externalRef });
      if (keys.revoked.length === 0 && keys.stillActive === 0 && again.length === 0) return;
    }
  }

  /** Proven empty: the statement, then the close on the platform with the balance left. */
  private async closeOnPlatform(): Promise<CloseTenantResult> {
    this.move('writing_statement');
    await acts.writeCloseStatement({
      externalRef: this.externalRef,
      runKey: this.request.runKey,
      projectsDeleted: Object.entries(this.status.projects)
        .filter(([, state]) => state === 'deleted')
        .map(([id]) => id),
    });
    this.move('closing_on_platform');
    const { balanceMicroUsd } = await acts.closeTenantOnPlatform(this.request);
    this.status.balanceLeftMicroUsd = balanceMicroUsd;
    this.move('closed');
    return this.result({
      projectsDeleted: this.progress.deleted,
      keysRevoked: this.status.keysRevoked.length,
      balanceLeftMicroUsd: balanceMicroUsd,
    });
  }

  private cancelRefusal(): string | null {
    return this.status.stage !== 'scheduled'
      ? `${lifecycleWorkflowId('close', this.externalRef)} is not waiting out a close window ` +
          `(stage ${this.status.stage}): too late to cancel`
      : this.cancel.by
        ? 'a cancel is already being applied'
        : null;
  }

  /** Takes the cancel; answers once the tenant is back as it was. */
  private async takeCancel(by: DecisionBy): Promise<DecisionAnswer> {
    this.cancel.by ??= by;
    await condition(() => this.cancel.done);
    return {
      stage: this.status.stage,
      effect:
        `the close of ${this.externalRef} is cancelled; ` + 'the tenant is back as it was, keys and projects untouched',
    };
  }

  /** Takes a verdict through its approval check; answers once the close applied it. */
  private async takeVerdict(verdict: CloseTransferVerdict): Promise<DecisionAnswer> {
    const transferState = await this.verdicts.take(verdict);
    return {
      stage: this.status.stage,
      transferState,
      effect: 'recorded; the close reconciles again and goes on once no transfer is open',
    };
  }

  /** A decision taken (its handler runs) but not yet applied by the close: the run never continues past it. */
  private decisionPending(): boolean {
    return this.cancel.by !== undefined || this.verdicts.pending || !allHandlersFinished();
  }

  /**
   * At a wait's safe point: past the bound, the run continues as new with where it stands, unless a
   * decision is pending (it is applied first; the run continues at the next safe point). Nothing awaits
   * between the check and the continuation, so no decision can be accepted in between.
   */
  private async boundHistory(): Promise<void> {
    const bound = (this.input.options?.historyEventBound ?? HISTORY_EVENT_BOUND) - BOUND_HEADROOM_EVENTS;
    if (!historyFull(bound) || this.decisionPending()) return;
    const next: Carried = {
      ...this.progress,
      phase: this.progress.phase!,
      runKey: this.request.runKey,
      startedAtMs: this.startedAtMs,
      status: this.status,
      polls: this.backoff?.polls ?? 0,
      wait: this.waits.current,
    };
    await continueAsNew<typeof closeTenant>({
      ...this.rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  }

  /** A wait's backoff, going on from the carried poll count in the phase the run continued in. */
  private backoffFrom(baseMs: number): Backoff {
    this.backoff = new Backoff(baseMs, this.ceilingMs, this.carriedPolls);
    this.carriedPolls = 0;
    return this.backoff;
  }

  /** A phase's first stage, unless the run continued in that phase (its stage and wait go on). */
  private startPhase(phase: Phase, stage: CloseStage): void {
    if (this.resumeIn === phase) this.resumeIn = null;
    else this.move(stage);
  }

  /** A stage the close moves through (any wait is over). */
  private move(stage: CloseStage): void {
    this.status.stage = stage;
    this.status.waitingFor = null;
    this.waits.leave(stage);
  }

  /** A wait: shown by currentWait, the TenantStatus attribute, the details and closeStatus. */
  private wait(stage: CloseStage, waitingFor: string, decisions: string[], nextCheckInMs: number | null): void {
    this.status.stage = stage;
    this.status.waitingFor = waitingFor;
    this.waits.enter(stage, waitingFor, decisions, nextCheckInMs);
  }

  private summary(): string[] {
    const { status } = this;
    const projects = Object.entries(status.projects).map(([id, state]) => `${id}: ${state}`);
    return [
      `**${status.stage}** — tenant \`${this.externalRef}\` (${status.subaccountId ?? '?'})`,
      `keys revoked: ${status.keysRevoked.length}`,
      `projects: ${projects.length ? projects.join(', ') : 'none seen yet'}`,
      status.closeAt && status.stage === 'scheduled' ? `closes at ${status.closeAt} (in ${status.timeLeft})` : '',
    ].filter(Boolean);
  }

  private result(of: Partial<CloseTenantResult>): CloseTenantResult {
    return {
      externalRef: this.externalRef,
      subaccountId: this.status.subaccountId!,
      status: 'closed',
      alreadyClosed: false,
      projectsDeleted: 0,
      keysRevoked: 0,
      balanceLeftMicroUsd: null,
      ...of,
    };
  }
}
