/**
 * fundTenant — why: a top-up after onboarding must be as safe as the first transfer: one request
 * (one caller idempotency key) moves money once, whatever is lost, retried or raced.
 *
 *   validate ─► recordTopUp (intent + cap reservation, one transaction; refused by a cap: done)
 *            ─► fundWallet ⟲ (insufficient balance: parent-wide state; a top-up waits for parentFunded or a
 *                             slow retry, an auto top-up gives its reservation back and ends;
 *                             unknown: reconcile under the same key; too long unknown: needs_operator)
 *            ─► succeeded
 *
 * The transfer itself is onboarding's machinery unchanged (activities/wallet.ts): the intent row
 * is written before the call, the platform key goes in header and body, an ambiguous outcome is
 * only retried under the same key. Operator decisions are Updates with validators.
 *
 * Its waits (waiting_for_parent_funds, reconciling_transfer, needs_operator) are the transfer loop's
 * (workflows/transfer-loop.ts): shown through `currentWait`, backing off, and past the history bound
 * the run continues as new carrying the intent (its purpose and sub-account: recordTopUp is never
 * asked again), the status and the wait; the next run goes on with the same fundWallet call.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { checkDecisionBy, checkTransferVerdict } from '../src/domain/operator-decisions.js';
import type { FundTenantInput } from '../src/domain/top-up-input.js';
import { topUpWorkflowId } from '../src/domain/ids.js';
import { platformTaskQueue } from '../src/domain/ids.js';
import { tenantExternalRefKey, tenantStatusKey } from '../src/domain/search-attributes.js';
import { accepted, refuseUnlessApplicable } from './decisions.js';
import { approvalCheck } from './approval-gate.js';
import {
  topUpParentFundedUpdate,
  topUpResolveTransferUpdate,
  topUpStatusQuery,
  type FundTenantResult,
  type TopUpStage,
  type TopUpStatus,
} from './fund-tenant-messages.js';
import { recordCapRefusal, recordOutcome } from './outcomes.js';
import { validateWorkflowInput } from './validate-input.js';
import { databaseStep } from './activity-policies.js';
import {
  carriedState,
  runTransferLoop,
  transferTimings,
  transferWaits,
  type TransferCarried,
} from './transfer-loop.js';
import { handlersFinished } from './waits.js';

export * from './fund-tenant-messages.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export async function fundTenant(rawInput: FundTenantInput): Promise<FundTenantResult> {
  const input = await validateWorkflowInput('fundTenant', rawInput, (i) =>
    topUpWorkflowId(i.externalRef, i.idempotencyKey),
  );
  const { externalRef, idempotencyKey, amountMicroUsd, kind } = input;
  const carried = carriedState<Carried>(input.continued);
  const startedAtMs = carried?.startedAtMs ?? Date.now();
  const timings = transferTimings(input.options);
  const status: TopUpStatus = carried?.status ?? {
    externalRef,
    idempotencyKey,
    amountMicroUsd,
    reason: input.reason ?? null,
    kind,
    stage: 'recording',
    transferState: null,
    transferId: null,
    waitingFor: null,
    error: null,
  };
  const ownDetails = () => {
    const lines = [
      `**${status.stage}** — ${kind} of ${amountMicroUsd} micro-USD for \`${externalRef}\` (key \`${idempotencyKey}\`)`,
      `transfer: ${status.transferState ?? 'not yet recorded'}${status.transferId ? ` ${status.transferId}` : ''}`,
    ];
    if (status.waitingFor) lines.push(`waiting: ${status.waitingFor}`);
    if (status.error) lines.push(`error: ${status.error}`);
    return lines;
  };
  const waits = transferWaits({
    details: ownDetails,
    carried: carried?.transfer,
    historyEventBound: timings.historyEventBound,
  });
  const { waiting } = waits;
  const id = topUpWorkflowId(externalRef, idempotencyKey);
  // Fleet work (the sweep's top-ups) calls the platform under the fleet's server-side rate limit,
  // as rotations do; a top-up someone asked for goes at once. The activity is the same either way.
  const transferOn =
    kind === 'auto'
      ? proxyActivities<Activities>({
          taskQueue: platformTaskQueue(workflowInfo().taskQueue),
          startToCloseTimeout: '30s',
          retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
        })
      : steps;

  setHandler(topUpStatusQuery, () => status);
  setHandler(
    topUpParentFundedUpdate,
    (raw) => {
      accepted(checkDecisionBy(raw));
      waits.parentFundedNow();
      return { stage: status.stage, effect: 'the transfer is retried now' };
    },
    {
      validator: (raw) => {
        accepted(checkDecisionBy(raw));
        refuseUnlessApplicable(
          waiting.forFunds ? null : `${id} is not waiting for the parent's funds (stage ${status.stage})`,
        );
      },
    },
  );
  setHandler(
    topUpResolveTransferUpdate,
    async (raw) => {
      const verdict = accepted(checkTransferVerdict(raw));
      const applied = waiting.verdictsApplied;
      // A gated verdict without a valid approval is refused here: the run takes nothing and keeps waiting.
      const taking = waits.giveVerdict(verdict, approvalCheck({ externalRef, close: false, verdict }));
      if (taking) await taking;
      await condition(() => waiting.verdictsApplied > applied);
      const effect =
        verdict.outcome === 'applied'
          ? 'settled as applied: no transfer is sent'
          : 'recorded as not applied: the transfer is sent again now under a fresh idempotency key';
      return { stage: status.stage, transferState: status.transferState ?? 'unknown', effect };
    },
    {
      validator: (raw) => {
        accepted(checkTransferVerdict(raw));
        refuseUnlessApplicable(
          waiting.forVerdict && !waits.verdictPending()
            ? null
            : `${id} has no transfer in needs_operator waiting for a verdict (stage ${status.stage})`,
        );
      },
    },
  );
  const show = (stage: TopUpStage, waitingFor: string | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    upsertSearchAttributes([{ key: tenantStatusKey, value: stage }]);
    waits.view.refresh();
  };
  // A continued run has its attributes from the run before (the server copies them on).
  if (!carried) {
    upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
    show('recording');
  } else waits.view.refresh();
  const ids = { externalRef, idempotencyKey, kind };
  const result = (state: FundTenantResult['state'], refusedBy: string | null = null): FundTenantResult => ({
    externalRef,
    idempotencyKey,
    amountMicroUsd,
    kind,
    state,
    transferId: status.transferId,
    refusedBy,
  });

  let purpose: string | null = carried?.purpose ?? null;
  try {
    const recorded = carried
      ? ({ state: 'recorded', purpose: carried.purpose, subaccountId: carried.subaccountId } as const)
      : await steps.recordTopUp(input);
    if (recorded.state === 'skipped') {
      show('skipped');
      return result('skipped', recorded.why);
    }
    if (recorded.state === 'cap_refused') {
      status.transferState = 'refused';
      show('cap_refused');
      recordCapRefusal(recorded.cap, kind);
      recordOutcome('top-up', 'cap_refused', startedAtMs, { ...ids, cap: recorded.cap }, 'warn');
      return result('cap_refused', recorded.cap);
    }
    purpose = recorded.purpose;
    const transfer = { externalRef, subaccountId: recorded.subaccountId, amountMicroUsd, purpose };
    if (!carried) show('transferring');
    const end = await runTransferLoop({
      externalRef,
      purpose,
      amountMicroUsd,
      timings,
      send: () => transferOn.fundWallet(transfer),
      note: (state) => {
        status.transferState = state.state === 'insufficient_balance' ? 'pending' : state.state;
      },
      show,
      afterRound: () => {
        if (status.stage !== 'transferring') show('transferring');
      },
      hints: {
        parentFunded: `tenantctl parent-funded --operator <you> --reason "..."`,
        resolveTransfer:
          `tenantctl resolve-transfer ${externalRef} --key ${idempotencyKey} --outcome applied|not-applied ` +
          `--operator <you> --reason "..."`,
      },
      onInsufficientBalance: async () => {
        await steps.noteParentInsufficient({ externalRef });
        if (kind !== 'auto') return 'wait';
        // One parent-wide state instead of a retry per tenant: the reservation is given back,
        // and the next sweep after `tenantctl parent-funded` starts afresh.
        status.transferState =
          (await steps.cancelTopUp({ externalRef, purpose: transfer.purpose }))?.state ?? 'cancelled';
        return 'stop';
      },
      waits,
    });
    switch (end.state) {
      case 'succeeded':
        status.transferId = end.transferId;
        show('succeeded');
        recordOutcome('top-up', 'succeeded', startedAtMs, {
          ...ids,
          transferId: end.transferId,
          resolution: end.resolution,
        });
        return result('succeeded');
      case 'failed':
        throw ApplicationFailure.nonRetryable(`the platform refused the top-up (${end.code})`, end.code);
      case 'stopped':
        show('skipped');
        recordOutcome('top-up', 'parent_insufficient', startedAtMs, ids, 'warn');
        return result('skipped', 'parent_insufficient');
      case 'continue': {
        // Every decision handler has answered (none is half taken at this point: transfer-loop.ts).
        await handlersFinished();
        const next: Carried = {
          status,
          purpose,
          subaccountId: recorded.subaccountId,
          startedAtMs,
          transfer: end.carried,
        };
        return await continueAsNew<typeof fundTenant>({
          ...rawInput,
          continued: next as unknown as Record<string, unknown>,
        });
      }
    }
  } catch (error) {
    // Continuing as new is no failure: the next run goes on.
    if (error instanceof ContinueAsNew) throw error;
    const cancelled = isCancellation(error);
    status.error = error instanceof Error ? error.message : String(error);
    if (cancelled && purpose) {
      const topUp = { externalRef, purpose };
      await CancellationScope.nonCancellable(() => steps.cancelTopUp(topUp));
    }
    show(cancelled ? 'cancelled' : 'failed');
    const type =
      error instanceof ApplicationFailure ? error.type : (error as { cause?: ApplicationFailure }).cause?.type;
    recordOutcome('top-up', cancelled ? 'cancelled' : 'failed', startedAtMs, { ...ids, type: type ?? null }, 'warn');
    throw error;
  }
}

/** What a run continued as new hands to the next: the intent recorded, where it stands, the wait. */
interface Carried {
  status: TopUpStatus;
  /** The transfer intent (with the external ref): the next run sends under it, never a new one. */
  purpose: string;
  subaccountId: string;
  startedAtMs: number;
  transfer: TransferCarried;
}
