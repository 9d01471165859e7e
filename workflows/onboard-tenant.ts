/**
 * onboardTenant — why: one call from the parent's signup backend must leave exactly one sub-account,
 * one transfer and one stored key, whatever is lost or killed on the way.
 *
 *   validate ─► ensureSubaccount ─┬─► fundWallet ⟲ (insufficient balance: wait for parentFunded or a slow retry;
 *   (records ownership,           │               unknown: reconcile; too long unknown: needs_operator + signal)
 *    then creates under a         └─► issueTenantKey ─► verifyTenantKey
 *    key from the external ref)                      ─► markTenantActive
 *
 * Since onboarding-patches-decided-at-start (onboard-tenant-attributes.ts) validate and the first
 * ensureSubaccount step are one local activity (beginOnboarding), and so are issue and verify
 * (issueAndVerifyTenantKey): four steps, the same calls and records, in the same order.
 *
 * Operator decisions (parentFunded, resolveTransfer) are Updates whose validators refuse a bad or
 * untimely value before it reaches history; a transfer is never re-sent on a typo.
 *
 * Every step is a LOCAL activity: each is idempotent on its own (Postgres records + idempotency keys),
 * so re-running one after a crash is safe, and they run without a server round trip each. Funding
 * and the key are independent once the sub-account exists, so they run side by side.
 * Tokens never pass through here: the key step returns { keyId, fingerprint } only.
 *
 * Its waits are the transfer loop's (workflows/transfer-loop.ts): shown through `currentWait`, backing
 * off, and past the history bound the run continues as new once the key step is done, carrying the
 * steps done (the sub-account, the key), the status and the funding's wait; the next run goes on with
 * the funding alone (the same intent, so the same fundWallet call) and never repeats a step.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  log,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { EnsureSubaccountStepResult } from '../activities/tenants.js';
import type { OnboardTenantInput } from '../src/domain/tenant-input.js';
import { checkDecisionBy, checkTransferVerdict } from '../src/domain/operator-decisions.js';
import { accepted, refuseUnlessApplicable, signalAccepted, signalRefused } from './decisions.js';
import { approvalCheck } from './approval-gate.js';
import { recordOutcome } from './outcomes.js';
import { inputRefusal, validateWorkflowInput } from './validate-input.js';
import {
  onboardingStatusQuery,
  parentFundedSignal,
  parentFundedUpdate,
  resolveTransferSignal,
  resolveTransferUpdate,
  type OnboardingStatus,
  type OnboardTenantResult,
} from './onboard-tenant-messages.js';
import { onboardingAttributes, onboardingDecidedAtStart } from './onboard-tenant-attributes.js';
import { onboardingDetails } from './onboard-tenant-details.js';
import { DEFAULT_SLOT, ONBOARDING_PURPOSE } from '../src/domain/onboarding.js';
import { ensureSubaccountOf, failureText } from './onboard-tenant-subaccount.js';
import { EXTERNAL_REF_MAX_LENGTH, onboardingWorkflowId, TENANT_NAME_MAX_LENGTH } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { databaseStep } from './activity-policies.js';
import {
  carriedState,
  runTransferLoop,
  transferTimings,
  transferWaits,
  type TransferCarried,
} from './transfer-loop.js';
import { handlersFinished } from './waits.js';

export * from './onboard-tenant-messages.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export { ONBOARDING_PURPOSE, DEFAULT_SLOT };

export async function onboardTenant(rawInput: OnboardTenantInput): Promise<OnboardTenantResult> {
  // Before any await: see onboard-tenant-attributes.ts.
  const decidedAtStart = onboardingDecidedAtStart();
  // A continued run has its sub-account already: its input is checked alone, no step is taken again.
  const { input, firstStep } =
    decidedAtStart && rawInput.continued === undefined
      ? await beginOnboarding(rawInput)
      : {
          input: await validateWorkflowInput('onboardTenant', rawInput, (i) => onboardingWorkflowId(i.externalRef)),
          firstStep: undefined,
        };
  const { externalRef, name } = input;
  const timings = transferTimings(input.options);
  const carried = carriedState<Carried>(input.continued);

  const status: OnboardingStatus = carried?.status ?? {
    externalRef,
    name,
    stage: 'recording',
    subaccountId: null,
    funding: input.fundingMicroUsd ? { state: 'pending', amountMicroUsd: input.fundingMicroUsd } : { state: 'skipped' },
    key: { state: 'pending', keyId: null, fingerprint: null },
    waitingFor: null,
    error: null,
  };
  // What the run waits for right now: a decision that does not apply to it is refused.
  const waits = transferWaits({
    details: () => onboardingDetails(status),
    carried: carried?.transfer,
    historyEventBound: timings.historyEventBound,
  });
  const { waiting } = waits;
  const notWaitingForFunds = () =>
    waiting.forFunds
      ? null
      : `${onboardingWorkflowId(externalRef)} is not waiting for the parent's funds (stage ${status.stage})`;
  const noTransferWaiting = () =>
    waiting.forVerdict && !waits.verdictPending()
      ? null
      : `${onboardingWorkflowId(externalRef)} has no transfer in needs_operator waiting ` +
        `for a verdict (stage ${status.stage})`;
  setHandler(onboardingStatusQuery, () => status);
  setHandler(
    parentFundedUpdate,
    (raw) => {
      const by = accepted(checkDecisionBy(raw));
      waits.parentFundedNow();
      log.info('parent funded, retrying the transfer now', { externalRef, operator: by.operator, reason: by.reason });
      return { stage: status.stage, effect: 'the transfer is retried now' };
    },
    {
      validator: (raw) => {
        accepted(checkDecisionBy(raw));
        refuseUnlessApplicable(notWaitingForFunds());
      },
    },
  );
  setHandler(
    resolveTransferUpdate,
    async (raw) => {
      const verdict = accepted(checkTransferVerdict(raw));
      const applied = waiting.verdictsApplied;
      // A gated verdict without a valid approval is refused here: the run takes nothing and keeps waiting.
      const taking = waits.giveVerdict(verdict, approvalCheck({ externalRef, close: false, verdict }));
      if (taking) await taking;
      // Answer once the verdict is recorded, with the transfer's state after it.
      await condition(() => waiting.verdictsApplied > applied);
      const effect =
        verdict.outcome === 'applied'
          ? 'settled as applied: no transfer is sent'
          : 'recorded as not applied: the transfer is sent again now under a fresh idempotency key';
      return { stage: status.stage, transferState: status.funding.state, effect };
    },
    {
      validator: (raw) => {
        accepted(checkTransferVerdict(raw));
        refuseUnlessApplicable(noTransferWaiting());
      },
    },
  );
  setHandler(parentFundedSignal, () => {
    if (signalAccepted<void>('parentFunded', { ok: true, value: undefined }, notWaitingForFunds(), undefined))
      waits.parentFundedNow();
  });
  setHandler(resolveTransferSignal, async (raw) => {
    const taken = signalAccepted('resolveTransfer', checkTransferVerdict(raw), noTransferWaiting(), raw);
    if (!taken) return;
    // The old way in is no way round the approval policy: refused the same way, with a logged warning.
    const check = approvalCheck({ externalRef, close: false, verdict: taken.value });
    const taking = waits.giveVerdict(taken.value, check);
    if (taking) await taking.catch(signalRefused('resolveTransfer'));
  });
  const attributes = onboardingAttributes(decidedAtStart);
  const show = (stage: OnboardingStatus['stage'], waitingFor: string | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    attributes.stage(stage);
    waits.view.refresh();
  };
  // A continued run has its attributes from the run before (the server copies them on).
  if (!carried) attributes.start(externalRef);
  waits.view.refresh();

  /** The funding's loop, to its end; its carried state when the run should continue as new first. */
  async function fund(subaccountId: string): Promise<TransferCarried | undefined> {
    const amountMicroUsd = input.fundingMicroUsd;
    if (!amountMicroUsd) return undefined;
    const startedAtMs = Date.now();
    const ids = { externalRef, subaccountId, purpose: ONBOARDING_PURPOSE };
    const end = await runTransferLoop({
      externalRef,
      purpose: ONBOARDING_PURPOSE,
      amountMicroUsd,
      timings,
      send: () => steps.fundWallet({ externalRef, subaccountId, amountMicroUsd, purpose: ONBOARDING_PURPOSE }),
      note: (state) => (status.funding = { ...state, amountMicroUsd }),
      show,
      afterRound: () => show(status.key.state === 'verified' ? 'funding' : 'funding_and_issuing_key'),
      hints: {
        parentFunded: `tenantctl parent-funded ${externalRef} --operator <you> --reason "..."`,
        resolveTransfer:
          `tenantctl resolve-transfer ${externalRef} --outcome applied|not-applied ` +
          `--operator <you> --reason "..."`,
      },
      waits,
    });
    if (end.state === 'continue') return end.carried;
    if (end.state === 'succeeded') {
      recordOutcome('transfer', 'succeeded', startedAtMs, {
        ...ids,
        transferId: end.transferId,
        resolution: end.resolution,
      });
      return undefined;
    }
    const code = end.state === 'failed' ? end.code : 'stopped';
    recordOutcome('transfer', 'failed', startedAtMs, { ...ids, code }, 'warn');
    // The platform's own refusal code (not one of ours) is the type: callers match on what the platform said.
    throw ApplicationFailure.nonRetryable(`the platform refused the funding transfer (${code})`, code);
  }

  async function issueAndVerifyKey(subaccountId: string): Promise<void> {
    const keyRef = { externalRef, slot: DEFAULT_SLOT, generation: 1 };
    // Since DECIDED_AT_START_PATCH one local activity issues and verifies (onboard-tenant-attributes.ts).
    const issued = decidedAtStart
      ? await steps.issueAndVerifyTenantKey({ ...keyRef, subaccountId })
      : await steps.issueTenantKey({ ...keyRef, subaccountId });
    if (issued.state === 'key_limit') {
      status.key = { state: 'key_limit', keyId: null, fingerprint: null };
      show(
        'needs_operator',
        `the tenant is at its active-key limit (${issued.activeKeys.length} active: ` +
          `${issued.activeKeys.map((k) => k.id).join(', ')}); revoke an unused key, then ` +
          `restart onboarding`,
      );
      throw codedFailure(FailureCode.API_KEY_LIMIT_REACHED, 'the tenant is at its active-key limit', {
        details: issued.activeKeys,
      });
    }
    status.key = { state: 'issued', keyId: issued.keyId, fingerprint: issued.fingerprint };
    if (!decidedAtStart) await steps.verifyTenantKey(keyRef);
    status.key = { ...status.key, state: 'verified' };
  }

  try {
    if (firstStep && 'failed' in firstStep) throw firstStep.failed;
    let subaccountId: string;
    let funded: TransferCarried | undefined;
    if (carried) {
      // The sub-account and the key are done (a run continues only once the key step is): the funding goes on.
      subaccountId = carried.subaccountId;
      funded = await fund(subaccountId);
    } else {
      ({ subaccountId } = await ensureSubaccountOf(steps, { externalRef, name }, attributes.patched, firstStep?.step));
      status.subaccountId = subaccountId;
      status.stage = 'funding_and_issuing_key';
      status.waitingFor = null;
      attributes.subaccount(subaccountId, status.stage);
      waits.view.refresh();
      [funded] = await Promise.all([fund(subaccountId), issueAndVerifyKey(subaccountId)]);
    }
    if (funded) {
      // Every decision handler has answered (none is half taken at this point: transfer-loop.ts).
      await handlersFinished();
      const next: Carried = { status, subaccountId, transfer: funded };
      return await continueAsNew<typeof onboardTenant>({
        ...rawInput,
        continued: next as unknown as Record<string, unknown>,
      });
    }
    await steps.markTenantActive({ externalRef });
    show('active');
    const funding = status.funding.state === 'succeeded' ? { transferId: status.funding.transferId } : null;
    recordOutcome('onboarding', 'active', workflowInfo().startTime.getTime(), {
      externalRef,
      subaccountId,
      keyId: status.key.keyId,
      transferId: funding?.transferId ?? null,
    });
    return {
      externalRef,
      subaccountId,
      status: 'active',
      keyId: status.key.keyId!,
      fingerprint: status.key.fingerprint!,
      funding,
    };
  } catch (error) {
    // Continuing as new is no failure: the next run goes on.
    if (error instanceof ContinueAsNew) throw error;
    const cancelled = isCancellation(error);
    status.error = failureText(error);
    const type =
      error instanceof ApplicationFailure ? error.type : (error as { cause?: ApplicationFailure }).cause?.type;
    // A conflict means the records belong to another onboarding: leave them untouched.
    if (type !== 'EXTERNAL_REF_CONFLICT' && type !== 'TENANT_CLOSED') {
      await CancellationScope.nonCancellable(() =>
        steps.markOnboardingStopped({
          externalRef,
          name,
          outcome: cancelled ? 'cancelled' : 'failed',
          reason: status.error ?? 'unknown',
        }),
      );
    }
    show(cancelled ? 'cancelled' : 'failed');
    recordOutcome(
      'onboarding',
      cancelled ? 'cancelled' : 'failed',
      workflowInfo().startTime.getTime(),
      { externalRef, subaccountId: status.subaccountId, type: type ?? null },
      'warn',
    );
    throw error;
  }
}

/**
 * What a run continued as new hands to the next: the steps done (the sub-account; the key, verified,
 * in the status), where the run stands, and the funding's wait. The transfer intent is the tenant's
 * onboarding funding (external ref + ONBOARDING_PURPOSE): the next run sends under it, never a new one.
 */
interface Carried {
  status: OnboardingStatus;
  subaccountId: string;
  transfer: TransferCarried;
}

/**
 * The first step of runs since onboarding-patches-decided-at-start: the input's checks and the
 * sub-account step in one local activity. A refused input fails the run at once, as
 * validateWorkflowInput does, before anything is written. A failure of the sub-account step comes
 * after the input passed the schema, so the input as given is the input (the schema transforms
 * nothing in it): it is handed on, to be thrown where the run handles a failed step (records marked
 * stopped, the failed stage shown; a cancel the same way).
 */
async function beginOnboarding(rawInput: OnboardTenantInput): Promise<{
  input: OnboardTenantInput;
  firstStep: { step: EnsureSubaccountStepResult } | { failed: unknown };
}> {
  try {
    const { input, step } = await steps.beginOnboarding({ input: rawInput, workflowType: workflowInfo().workflowType });
    return { input, firstStep: { step } };
  } catch (error) {
    const refused = inputRefusal(error);
    if (refused) throw refused;
    // A cancel or timeout may come before the schema ran: an input that cannot be a checked one
    // (it would reach search attributes and records) fails the run as it is.
    const given = rawInput as { externalRef?: unknown; name?: unknown };
    if (
      typeof given.externalRef !== 'string' ||
      given.externalRef.length > EXTERNAL_REF_MAX_LENGTH ||
      typeof given.name !== 'string' ||
      given.name.length > TENANT_NAME_MAX_LENGTH
    )
      throw error;
    return { input: rawInput, firstStep: { failed: error } };
  }
}
