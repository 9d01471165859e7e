/**
 * closeTenant — why: a closed tenant answers 404 like an absent one, so nothing can be fixed after
 * the close. The close therefore happens only once the tenant is provably empty.
 *
 *   validate ─► mark closing (blocks onboarding steps, rotations, new keys)
 *            ─► cancel a running onboarding; cancel rotations and wait until they rolled back
 *            ─► resolve unknown transfers (wallet, same key; else needs_operator + the resolveTransfer update)
 *            ─► revoke every key (so workloads stop creating resources) ─► resume if suspended
 *            ─► delete every project, listing again until none remain (404 = done)
 *            ─► verify: zero projects and zero active keys ─► read balance, close, record
 *
 * Every step is an ordinary activity (visible per project in the history) and safe to repeat, so a
 * worker killed mid-cleanup resumes where it was. A repeated close is a no-op success.
 */
import {
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { LifecycleWorkflowInput } from '../src/domain/tenant-input.js';
import { tenantExternalRefKey, tenantStatusKey, tenantSubaccountIdKey } from '../src/domain/search-attributes.js';
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
import { cancelRotationsForClose } from './rotate-tenant-key-close.js';
import { msOf, validateWorkflowInput } from './validate-input.js';
import { lifecycleWorkflowId, onboardingWorkflowId } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { closeCleanup } from './activity-policies.js';

export * from './close-tenant-messages.js';

const acts = proxyActivities<Activities>(closeCleanup);

const MAX_CLEANUP_ROUNDS = 50;
// A delayed close refreshes the time left in its details this often (one timer each).
const DETAILS_REFRESH_MS = 3_600_000;
// Added after closeTenant histories were recorded: a delayed close, and the final statement.
const DELAYED_CLOSE_PATCH = 'close-after-delay';
const STATEMENT_PATCH = 'close-statement';

function timeLeftOf(ms: number): string {
  const minutes = Math.ceil(ms / 60_000);
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  return days > 0 ? `${days}d ${hours}h` : hours > 0 ? `${hours}h ${minutes % 60}m` : `${Math.max(minutes, 0)}m`;
}

export async function closeTenant(rawInput: LifecycleWorkflowInput): Promise<CloseTenantResult> {
  const input = await validateWorkflowInput('lifecycle', rawInput, (i) => lifecycleWorkflowId('close', i.externalRef));
  const { externalRef } = input;
  const pollInterval = input.options?.pollInterval ?? '5s';
  const unknownDeadline = input.options?.unknownTransferDeadline ?? '15m';
  const request = { ...input, runKey: workflowInfo().firstExecutionRunId };
  const status: CloseStatus = {
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
  const show = (stage: CloseStage, waitingFor: string | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    upsertSearchAttributes([{ key: tenantStatusKey, value: stage === 'closed' ? 'closed' : `close:${stage}` }]);
    const projects = Object.entries(status.projects).map(([id, state]) => `${id}: ${state}`);
    setCurrentDetails(
      [
        `**${stage}** — tenant \`${externalRef}\` (${status.subaccountId ?? '?'})`,
        `keys revoked: ${status.keysRevoked.length}`,
        `projects: ${projects.length ? projects.join(', ') : 'none seen yet'}`,
        waitingFor ? `waiting: ${waitingFor}` : '',
        status.closeAt && stage === 'scheduled' ? `closes at ${status.closeAt} (in ${status.timeLeft})` : '',
      ]
        .filter(Boolean)
        .join('\n\n'),
    );
  };
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);

  const startedAtMs = workflowInfo().startTime.getTime();
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
  async function waitOutWindow(delayMs: number): Promise<CloseTenantResult | null> {
    const closeAtMs = Date.now() + delayMs;
    status.closeAt = new Date(closeAtMs).toISOString();
    const { subaccountId, windowed } = await acts.scheduleClose({
      ...request,
      closeAt: status.closeAt,
      after: String(input.after),
    });
    status.subaccountId = subaccountId;
    // Already closing or closed: no window to wait out, the close goes on (or is a no-op) as before.
    if (!windowed) {
      status.closeAt = null;
      return null;
    }
    for (;;) {
      const left = closeAtMs - Date.now();
      if (cancel.by || left <= 0) break;
      status.timeLeft = timeLeftOf(left);
      show('scheduled', `the close window: \`tenantctl close --cancel ${externalRef}\` (update cancelClose) undoes it`);
      await condition(() => cancel.by !== undefined, Math.min(left, DETAILS_REFRESH_MS));
    }
    if (!cancel.by) {
      await acts.closeWindowEnded({ runKey: request.runKey });
      status.timeLeft = null;
      return null;
    }
    await acts.cancelScheduledClose({ externalRef, runKey: request.runKey, ...cancel.by });
    status.timeLeft = null;
    show('close_cancelled');
    cancel.done = true;
    return {
      externalRef,
      subaccountId,
      status: 'close_cancelled',
      alreadyClosed: false,
      projectsDeleted: 0,
      keysRevoked: 0,
      balanceLeftMicroUsd: null,
    };
  }

  async function closeSteps(): Promise<CloseTenantResult> {
    const delayMs = input.after ? msOf(input.after) : 0;
    if (delayMs > 0 && patched(DELAYED_CLOSE_PATCH)) {
      const cancelled = await waitOutWindow(delayMs);
      if (cancelled) return cancelled;
    }
    const begun = await acts.beginClose(request);
    status.subaccountId = begun.subaccountId;
    upsertSearchAttributes([{ key: tenantSubaccountIdKey, value: begun.subaccountId }]);
    if (begun.alreadyClosed) {
      show('closed');
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

    show('stopping_other_work');
    await getExternalWorkflowHandle(onboardingWorkflowId(externalRef))
      .cancel()
      .catch(() => undefined);
    await cancelRotationsForClose(externalRef, { pollInterval: '1s' });

    show('resolving_transfers');
    let unknownSince: number | undefined;
    for (;;) {
      const open = await acts.reconcileOpenTransfers({ externalRef, subaccountId: begun.subaccountId });
      status.openTransfers = open;
      if (open.length === 0) break;
      const verdict = verdicts.shift();
      if (verdict) {
        const { seq, ...decision } = verdict;
        const after = await acts.resolveTransferByOperator({ externalRef, ...decision });
        verdictState.inFlight.delete(decision.purpose);
        verdictState.results.set(seq, after.state);
        continue;
      }
      unknownSince ??= Date.now();
      if (open.some((t) => t.state === 'needs_operator') || Date.now() - unknownSince > msOf(unknownDeadline)) {
        for (const t of open.filter((o) => o.state === 'unknown'))
          await acts.markTransferNeedsOperator({ externalRef, purpose: t.purpose });
        show(
          'needs_operator',
          `transfer(s) ${open.map((t) => t.purpose).join(', ')} could not be reconciled: ` +
            `check the wallet, then \`tenantctl resolve-transfer ${externalRef} --close ` +
            `--purpose <purpose> --outcome applied|not-applied --operator <you> --reason ` +
            `"..."\` (update resolveTransfer)`,
        );
        await condition(() => verdicts.length > 0);
      } else await sleep(pollInterval);
    }

    show('revoking_keys');
    for (;;) {
      const { revoked, stillActive } = await acts.revokeAllTenantKeys({ externalRef });
      status.keysRevoked.push(...revoked);
      if (stillActive === 0) break;
      await sleep(pollInterval);
    }

    if ((await acts.resumeForCleanup(request)).resumed) show('resuming_for_cleanup');

    let deleted = 0;
    for (;;) {
      if (++status.rounds > MAX_CLEANUP_ROUNDS) {
        throw codedFailure(
          FailureCode.CLEANUP_INCOMPLETE,
          `tenant ${externalRef} still has resources after ${MAX_CLEANUP_ROUNDS} cleanup rounds; not closing`,
        );
      }
      show('deleting_projects');
      const projects = await acts.listTenantProjects({ externalRef });
      if (projects.length > 0) {
        for (const project of projects) {
          status.projects[project.id] = 'deleting';
          show('deleting_projects');
          const { deleted: gone } = await acts.deleteTenantProject({ externalRef, projectId: project.id });
          status.projects[project.id] = gone ? 'deleted' : 'already_gone';
          if (gone) deleted++;
        }
        continue;
      }
      // Empty once; prove it again together with the keys (a workload may have raced the revoke).
      show('verifying_empty');
      const keys = await acts.revokeAllTenantKeys({ externalRef });
      status.keysRevoked.push(...keys.revoked);
      const again = await acts.listTenantProjects({ externalRef });
      if (keys.revoked.length === 0 && keys.stillActive === 0 && again.length === 0) break;
    }

    if (patched(STATEMENT_PATCH)) {
      show('writing_statement');
      await acts.writeCloseStatement({
        externalRef,
        runKey: request.runKey,
        projectsDeleted: Object.entries(status.projects)
          .filter(([, state]) => state === 'deleted')
          .map(([id]) => id),
      });
    }
    show('closing_on_platform');
    const { balanceMicroUsd } = await acts.closeTenantOnPlatform(request);
    status.balanceLeftMicroUsd = balanceMicroUsd;
    show('closed');
    return {
      externalRef,
      subaccountId: begun.subaccountId,
      status: 'closed',
      alreadyClosed: false,
      projectsDeleted: deleted,
      keysRevoked: status.keysRevoked.length,
      balanceLeftMicroUsd: balanceMicroUsd,
    };
  }
}
