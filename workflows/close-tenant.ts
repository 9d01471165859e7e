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
 */
import {
  allHandlersFinished,
  condition,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { LifecycleWorkflowInput } from '../src/domain/tenant-input.js';
import { tenantExternalRefKey, tenantSubaccountIdKey } from '../src/domain/search-attributes.js';
import {
  checkCloseTransferVerdict,
  checkDecisionBy,
  type CloseTransferVerdict,
  type DecisionBy,
} from '../src/domain/operator-decisions.js';
import {
  cancelCloseUpdate,
  closeResolveTransferSignal,
  closeResolveTransferUpdate,
  closeStatusQuery,
  type CloseStage,
  type CloseStatus,
  type CloseTenantResult,
} from './close-tenant-messages.js';
import { accepted, refuseUnlessApplicable, signalAccepted, signalRefused } from './decisions.js';
import { approvalCheck } from './approval-gate.js';
import { recordOutcome } from './outcomes.js';
import { msOf, validateWorkflowInput } from './validate-input.js';
import { lifecycleWorkflowId, onboardingWorkflowId } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
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
// Added after closeTenant histories were recorded: a delayed close, and the final statement.
const DELAYED_CLOSE_PATCH = 'close-after-delay';
const STATEMENT_PATCH = 'close-statement';

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

function timeLeftOf(ms: number): string {
  const minutes = Math.ceil(ms / 60_000);
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  return days > 0 ? `${days}d ${hours}h` : hours > 0 ? `${hours}h ${minutes % 60}m` : `${Math.max(minutes, 0)}m`;
}

export async function closeTenant(rawInput: LifecycleWorkflowInput): Promise<CloseTenantResult> {
  const input = await validateWorkflowInput('lifecycle', rawInput, (i) => lifecycleWorkflowId('close', i.externalRef));
  const { externalRef } = input;
  const carried = input.continued as Carried | undefined;
  const pollMs = msOf(input.options?.pollInterval ?? '5s');
  const ceilingMs = input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling);
  const unknownDeadlineMs = msOf(input.options?.unknownTransferDeadline ?? '15m');
  const { continued: _continued, ...plain } = input;
  const request = { ...plain, runKey: carried?.runKey ?? workflowInfo().firstExecutionRunId };
  const status: CloseStatus = carried?.status ?? {
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
  const startedAtMs = carried?.startedAtMs ?? workflowInfo().startTime.getTime();
  const progress: Progress = {
    phase: carried?.phase ?? null,
    closeAtMs: carried?.closeAtMs ?? null,
    rotationsDeadlineMs: carried?.rotationsDeadlineMs ?? null,
    unknownSince: carried?.unknownSince ?? null,
    deleted: carried?.deleted ?? 0,
  };
  // The phase this run continued in: its stage (and wait) go on as they were, not entered anew.
  let resumeIn: Phase | null = carried?.phase ?? null;
  // The carried poll count belongs to the wait of the phase the run continued in.
  let carriedPolls = carried?.polls ?? 0;
  const backoffFrom = (baseMs: number) => {
    const backoff = new Backoff(baseMs, ceilingMs, carriedPolls);
    carriedPolls = 0;
    return backoff;
  };
  let backoff: Backoff | null = null;

  // Verdicts queued or being applied, numbered in arrival order; the transfer state each left.
  const verdicts: Array<CloseTransferVerdict & { seq: number }> = [];
  const verdictState = { queued: 0, inFlight: new Set<string>(), results: new Map<number, string>() };
  const enqueue = (verdict: CloseTransferVerdict) => {
    const seq = ++verdictState.queued;
    verdictState.inFlight.add(verdict.purpose);
    verdicts.push({ ...verdict, seq });
    return seq;
  };
  // The approval gate (approval-gate.ts): while a verdict's approval is checked its transfer takes no
  // other verdict; a refusal leaves the close waiting as it was.
  const enqueueChecked = (verdict: CloseTransferVerdict): number | Promise<number> => {
    const check = approvalCheck({ externalRef, close: true, purpose: verdict.purpose, verdict });
    if (!check) return enqueue(verdict);
    verdictState.inFlight.add(verdict.purpose);
    return check.then(
      () => enqueue(verdict),
      (error: unknown) => {
        verdictState.inFlight.delete(verdict.purpose);
        throw error;
      },
    );
  };
  const noTransferWaiting = (purpose: string): string | null => {
    if (status.stage !== 'needs_operator')
      return (
        `${lifecycleWorkflowId('close', externalRef)} is not waiting for an operator's ` +
        `verdict (stage ${status.stage})`
      );
    if (!status.openTransfers.some((t) => t.purpose === purpose)) {
      return (
        `purpose: close:${externalRef} has no open transfer "${purpose}" (open: ` +
        `${status.openTransfers.map((t) => t.purpose).join(', ') || 'none'})`
      );
    }
    return verdictState.inFlight.has(purpose) ? `a verdict on transfer "${purpose}" is already being applied` : null;
  };

  const summary = (): string[] => {
    const projects = Object.entries(status.projects).map(([id, state]) => `${id}: ${state}`);
    return [
      `**${status.stage}** — tenant \`${externalRef}\` (${status.subaccountId ?? '?'})`,
      `keys revoked: ${status.keysRevoked.length}`,
      `projects: ${projects.length ? projects.join(', ') : 'none seen yet'}`,
      status.closeAt && status.stage === 'scheduled' ? `closes at ${status.closeAt} (in ${status.timeLeft})` : '',
    ].filter(Boolean);
  };
  const waits = new Waits(
    { tenantStatus: (stage) => (stage === 'closed' ? 'closed' : `close:${stage}`), details: summary },
    carried?.wait ?? null,
  );
  // A stage the close moves through (any wait is over).
  const move = (stage: CloseStage) => {
    status.stage = stage;
    status.waitingFor = null;
    waits.leave(stage);
  };
  // A wait: shown by currentWait, the TenantStatus attribute, the details and closeStatus.
  const wait = (stage: CloseStage, waitingFor: string, decisions: string[], nextCheckInMs: number | null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    waits.enter(stage, waitingFor, decisions, nextCheckInMs);
  };

  setHandler(closeStatusQuery, () => status);
  const cancel: { by?: DecisionBy; done: boolean } = { done: false };
  setHandler(
    cancelCloseUpdate,
    async (raw) => {
      cancel.by ??= accepted(checkDecisionBy(raw));
      await condition(() => cancel.done);
      return {
        stage: status.stage,
        effect: `the close of ${externalRef} is cancelled; the tenant is back as it was, keys and projects untouched`,
      };
    },
    {
      validator: (raw) => {
        accepted(checkDecisionBy(raw));
        refuseUnlessApplicable(
          status.stage !== 'scheduled'
            ? `${lifecycleWorkflowId('close', externalRef)} is not waiting out a close window ` +
                `(stage ${status.stage}): too late to cancel`
            : cancel.by
              ? 'a cancel is already being applied'
              : null,
        );
      },
    },
  );
  setHandler(
    closeResolveTransferUpdate,
    async (raw) => {
      const seq = await enqueueChecked(accepted(checkCloseTransferVerdict(raw)));
      // Answer once the verdict is recorded, with the transfer's state after it.
      await condition(() => verdictState.results.has(seq));
      return {
        stage: status.stage,
        transferState: verdictState.results.get(seq)!,
        effect: 'recorded; the close reconciles again and goes on once no transfer is open',
      };
    },
    {
      validator: (raw) => {
        refuseUnlessApplicable(noTransferWaiting(accepted(checkCloseTransferVerdict(raw)).purpose));
      },
    },
  );
  setHandler(closeResolveTransferSignal, async (raw) => {
    const checked = checkCloseTransferVerdict(raw);
    const taken = signalAccepted(
      'resolveTransfer',
      checked,
      checked.ok ? noTransferWaiting(checked.value.purpose) : null,
      raw,
    );
    if (!taken) return;
    // The old way in is no way round the approval policy: refused the same way, with a logged warning.
    const queued = enqueueChecked(taken.value);
    if (typeof queued !== 'number') await queued.catch(signalRefused('resolveTransfer'));
  });
  if (carried) {
    // The attribute carries over; set it again for this run's Waits (one event).
    if (!carried.wait) waits.leave(status.stage);
  } else upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);

  /** A decision taken (its handler runs) but not yet applied by the close: the run never continues past it. */
  const decisionPending = () =>
    cancel.by !== undefined || verdicts.length > 0 || verdictState.inFlight.size > 0 || !allHandlersFinished();

  /**
   * At a wait's safe point: past the bound, the run continues as new with where it stands, unless a
   * decision is pending (it is applied first; the run continues at the next safe point). Nothing awaits
   * between the check and the continuation, so no decision can be accepted in between.
   */
  async function boundHistory(): Promise<void> {
    const bound = (input.options?.historyEventBound ?? HISTORY_EVENT_BOUND) - BOUND_HEADROOM_EVENTS;
    if (!historyFull(bound) || decisionPending()) return;
    const next: Carried = {
      ...progress,
      phase: progress.phase!,
      runKey: request.runKey,
      startedAtMs,
      status,
      polls: backoff?.polls ?? 0,
      wait: waits.current,
    };
    await continueAsNew<typeof closeTenant>({ ...rawInput, continued: next as unknown as Record<string, unknown> });
  }

  /** A phase's first stage, unless the run continued in that phase (its stage and wait go on). */
  const startPhase = (phase: Phase, stage: CloseStage) => {
    if (resumeIn === phase) resumeIn = null;
    else move(stage);
  };
  try {
    const result = await closeSteps();
    const { subaccountId, projectsDeleted, keysRevoked } = result;
    recordOutcome('close', result.alreadyClosed ? 'already_closed' : 'closed', startedAtMs, {
      externalRef,
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
      startedAtMs,
      { externalRef, subaccountId: status.subaccountId, stage: status.stage },
      'warn',
    );
    throw error;
  }

  /** Suspended now; closed when the window ends; undone by a cancelClose inside it. */
  async function waitOutWindow(): Promise<CloseTenantResult | null> {
    resumeIn = null;
    const closeAtMs = progress.closeAtMs!;
    const refreshMs = Math.min(WINDOW_REFRESH_MS, ceilingMs ?? WINDOW_REFRESH_MS);
    for (;;) {
      const left = closeAtMs - Date.now();
      if (cancel.by || left <= 0) break;
      await boundHistory();
      if (cancel.by) break;
      status.timeLeft = timeLeftOf(left);
      wait(
        'scheduled',
        `the close window, until ${status.closeAt}: \`tenantctl close --cancel ${externalRef}\` ` +
          `(update cancelClose) undoes it`,
        ['cancelClose'],
        left,
      );
      await condition(() => cancel.by !== undefined, Math.min(left, refreshMs));
    }
    status.timeLeft = null;
    if (!cancel.by) {
      // From here a cancel is refused: the close goes on.
      move('closing');
      await acts.closeWindowEnded({ runKey: request.runKey });
      return null;
    }
    await acts.cancelScheduledClose({ externalRef, runKey: request.runKey, ...cancel.by });
    move('close_cancelled');
    cancel.done = true;
    return {
      externalRef,
      subaccountId: status.subaccountId!,
      status: 'close_cancelled',
      alreadyClosed: false,
      projectsDeleted: 0,
      keysRevoked: 0,
      balanceLeftMicroUsd: null,
    };
  }

  /** Marks the tenant closing, stops its onboarding and rotations; null when it is closed already. */
  async function begin(): Promise<CloseTenantResult | null> {
    const begun = await acts.beginClose(request);
    status.subaccountId = begun.subaccountId;
    upsertSearchAttributes([{ key: tenantSubaccountIdKey, value: begun.subaccountId }]);
    if (begun.alreadyClosed) {
      move('closed');
      return {
        externalRef,
        subaccountId: begun.subaccountId,
        status: 'closed',
        alreadyClosed: true,
        projectsDeleted: 0,
        keysRevoked: 0,
        balanceLeftMicroUsd: null,
      };
    }
    move('stopping_other_work');
    await getExternalWorkflowHandle(onboardingWorkflowId(externalRef))
      .cancel()
      .catch(() => undefined);
    // Called AFTER the record says closing (new rotations are refused): cancel every open one.
    const open = await db.listOpenRotationsOfTenant({ externalRef });
    for (const rotation of open) {
      // Not found or already closed: nothing to cancel; the record is watched below all the same.
      await getExternalWorkflowHandle(rotation.workflowId)
        .cancel()
        .catch(() => undefined);
    }
    progress.rotationsDeadlineMs = Date.now() + ROTATIONS_TIMEOUT_MS;
    progress.phase = 'stopping';
    return null;
  }

  /**
   * Until every cancelled rotation rolled back (the new key revoked, the old one redeployed, the record
   * `cancelled`; one past revoking its old key just finishes). Either way no extra active key remains.
   * Fails ROTATION_STILL_OPEN (retryable: close again) past its deadline, before anything is cleaned up.
   */
  async function waitForRotations(): Promise<void> {
    resumeIn = null;
    backoff = backoffFrom(ROTATION_POLL_MS);
    for (;;) {
      const open = await db.listOpenRotationsOfTenant({ externalRef });
      if (open.length === 0) return;
      const deadline = progress.rotationsDeadlineMs!;
      if (Date.now() >= deadline) {
        throw codedFailure(FailureCode.ROTATION_STILL_OPEN, `rotations of ${externalRef} still open`, {
          details: { open },
          retryable: true,
        });
      }
      await boundHistory();
      const nextMs = Math.max(1, Math.min(backoff.next(), deadline - Date.now()));
      wait(
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
  async function resolveTransfers(): Promise<void> {
    startPhase('transfers', 'resolving_transfers');
    backoff = backoffFrom(pollMs);
    for (;;) {
      await boundHistory();
      const open = await acts.reconcileOpenTransfers({ externalRef, subaccountId: status.subaccountId! });
      status.openTransfers = open;
      if (open.length === 0) return;
      const verdict = verdicts.shift();
      if (verdict) {
        const { seq, ...decision } = verdict;
        const after = await acts.resolveTransferByOperator({ externalRef, ...decision });
        verdictState.inFlight.delete(decision.purpose);
        verdictState.results.set(seq, after.state);
        continue;
      }
      progress.unknownSince ??= Date.now();
      const askAt = progress.unknownSince + unknownDeadlineMs;
      if (open.some((t) => t.state === 'needs_operator') || Date.now() > askAt) {
        for (const t of open.filter((o) => o.state === 'unknown'))
          await acts.markTransferNeedsOperator({ externalRef, purpose: t.purpose });
        wait(
          'needs_operator',
          `an operator's verdict on transfer(s) ${open.map((t) => t.purpose).join(', ')}, which could not be ` +
            `reconciled: check the wallet, then \`tenantctl resolve-transfer ${externalRef} --close ` +
            `--purpose <purpose> --outcome applied|not-applied --operator <you> --reason ` +
            `"..."\` (update resolveTransfer)`,
          ['resolveTransfer'],
          null,
        );
        await condition(() => verdicts.length > 0);
      } else {
        const nextMs = Math.max(1, Math.min(backoff.next(), askAt - Date.now()));
        wait(
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
  async function revokeKeys(): Promise<void> {
    startPhase('revoking', 'revoking_keys');
    backoff = backoffFrom(pollMs);
    for (;;) {
      await boundHistory();
      const { revoked, stillActive } = await acts.revokeAllTenantKeys({ externalRef });
      status.keysRevoked.push(...revoked);
      if (stillActive === 0) return;
      const nextMs = backoff.next();
      wait(
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
  async function deleteProjects(): Promise<void> {
    startPhase('cleanup', 'deleting_projects');
    backoff = backoffFrom(pollMs);
    for (;;) {
      await boundHistory();
      if (++status.rounds > MAX_CLEANUP_ROUNDS) {
        throw codedFailure(
          FailureCode.CLEANUP_INCOMPLETE,
          `tenant ${externalRef} still has resources after ${MAX_CLEANUP_ROUNDS} cleanup rounds; not closing`,
        );
      }
      if (!waits.current) move('deleting_projects');
      const projects = await acts.listTenantProjects({ externalRef });
      if (projects.length > 0) {
        const stuck = projects.filter((p) => ['deleted', 'already_gone'].includes(status.projects[p.id] ?? ''));
        if (stuck.length > 0) {
          const nextMs = backoff.next();
          wait(
            'deleting_projects',
            `project(s) ${stuck.map((p) => p.id).join(', ')} deleted but still listed by the platform: deleted ` +
              `again by itself; the close gives up (CLEANUP_INCOMPLETE, not closed) after ` +
              `${MAX_CLEANUP_ROUNDS} rounds (round ${status.rounds})`,
            [],
            nextMs,
          );
          await sleep(nextMs);
        } else move('deleting_projects');
        for (const project of projects) {
          const seen = status.projects[project.id];
          status.projects[project.id] = 'deleting';
          if (!waits.current) move('deleting_projects');
          const { deleted: gone } = await acts.deleteTenantProject({ externalRef, projectId: project.id });
          // A project deleted again (it was still listed) counts once.
          status.projects[project.id] = gone || seen === 'deleted' ? 'deleted' : 'already_gone';
          if (gone && seen !== 'deleted') progress.deleted++;
        }
        continue;
      }
      // Empty once; prove it again together with the keys (a workload may have raced the revoke).
      move('verifying_empty');
      const keys = await acts.revokeAllTenantKeys({ externalRef });
      status.keysRevoked.push(...keys.revoked);
      const again = await acts.listTenantProjects({ externalRef });
      if (keys.revoked.length === 0 && keys.stillActive === 0 && again.length === 0) return;
    }
  }

  async function closeSteps(): Promise<CloseTenantResult> {
    if (!carried) {
      const delayMs = input.after ? msOf(input.after) : 0;
      if (delayMs > 0 && patched(DELAYED_CLOSE_PATCH)) {
        const closeAtMs = Date.now() + delayMs;
        status.closeAt = new Date(closeAtMs).toISOString();
        const { subaccountId, windowed } = await acts.scheduleClose({
          ...request,
          closeAt: status.closeAt,
          after: String(input.after),
        });
        status.subaccountId = subaccountId;
        // Already closing or closed: no window to wait out, the close goes on (or is a no-op) as before.
        if (windowed) Object.assign(progress, { phase: 'window', closeAtMs });
        else status.closeAt = null;
      }
    }
    if (progress.phase === null || progress.phase === 'window') {
      if (progress.phase === 'window') {
        const cancelled = await waitOutWindow();
        if (cancelled) return cancelled;
      }
      const closed = await begin();
      if (closed) return closed;
    }
    if (progress.phase === 'stopping') {
      await waitForRotations();
      progress.phase = 'transfers';
    }
    if (progress.phase === 'transfers') {
      await resolveTransfers();
      progress.phase = 'revoking';
    }
    if (progress.phase === 'revoking') {
      await revokeKeys();
      if ((await acts.resumeForCleanup(request)).resumed) move('resuming_for_cleanup');
      progress.phase = 'cleanup';
    }
    await deleteProjects();

    if (patched(STATEMENT_PATCH)) {
      move('writing_statement');
      await acts.writeCloseStatement({
        externalRef,
        runKey: request.runKey,
        projectsDeleted: Object.entries(status.projects)
          .filter(([, state]) => state === 'deleted')
          .map(([id]) => id),
      });
    }
    move('closing_on_platform');
    const { balanceMicroUsd } = await acts.closeTenantOnPlatform(request);
    status.balanceLeftMicroUsd = balanceMicroUsd;
    move('closed');
    return {
      externalRef,
      subaccountId: status.subaccountId!,
      status: 'closed',
      alreadyClosed: false,
      projectsDeleted: progress.deleted,
      keysRevoked: status.keysRevoked.length,
      balanceLeftMicroUsd: balanceMicroUsd,
    };
  }
}
