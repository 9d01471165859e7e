/**
 * onboardTenant — why: one call from the parent's signup backend must leave exactly one sub-account,
 * one transfer and one stored key, whatever is lost or killed on the way.
 *
 *   validate ─► ensureSubaccount ─┬─► fundWallet ⟲ (insufficient balance: wait for parentFunded or a slow retry;
 *   (records ownership,           │               unknown: reconcile; too long unknown: needs_operator)
 *    then creates under a         └─► issueTenantKey ─► verifyTenantKey
 *    key from the external ref)                      ─► markTenantActive
 *
 * validate and the first ensureSubaccount step are one local activity (beginOnboarding), and so are
 * issue and verify (issueAndVerifyTenantKey): four steps.
 *
 * Operator decisions (parentFunded, resolveTransfer) are the transfer loop's Updates, whose validators
 * refuse a bad or untimely value before it reaches history; a transfer is never re-sent on a typo.
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
  ContinueAsNew,
  isCancellation,
  proxyLocalActivities,
  patched,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { EnsureSubaccountStepResult } from '../activities/tenants.js';
import type { OnboardTenantInput } from '../src/domain/tenant-input.js';
import { recordOutcome } from './outcomes.js';
import type { ResolvedPlan } from '../src/domain/plans.js';
import { carryOutPlan, type OnboardingPlanOutcome } from './onboard-tenant-plan.js';
import { inputRefusal, msOf, validateWorkflowInput } from './validate-input.js';
import { onboardingStatusQuery, type OnboardingStatus, type OnboardTenantResult } from './onboard-tenant-messages.js';
import { onboardingAttributes } from './onboard-tenant-attributes.js';
import { onboardingDetails } from './onboard-tenant-details.js';
import { DEFAULT_SLOT, ONBOARDING_PURPOSE } from '../src/domain/onboarding.js';
import { ensureSubaccountOf, failureText } from './onboard-tenant-subaccount.js';
import { EXTERNAL_REF_MAX_LENGTH, onboardingWorkflowId, TENANT_NAME_MAX_LENGTH } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { databaseStep } from './activity-policies.js';
import {
  carriedState,
  continueCarrying,
  failureType,
  runTransferLoop,
  transferTimings,
  TransferWaits,
  type TransferCarried,
  type TransferTimings,
} from './transfer-loop.js';

export * from './onboard-tenant-messages.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

/** The wait after the key step's bound on refused new keys (KEY_REJECTED, final): a timer, then one more key. */
export const KEY_REJECTED_WAIT_PATCH = 'onboarding-key-rejected-waits';
/**
 * The key's and the funding's first attempts at once, and no command of either until both answered; then each goes on
 * in turn, the key first (before: both steps side by side to their ends). Two local activities at once do not replay
 * in the order they ran when one goes into a backoff timer as the other's answer starts a wait in one workflow task:
 * the replay resolves both in one activation, and the backoff's timer comes before the wait's commands (TMPRL1100;
 * the restore drill's 429 storm and a worker kill met it). Waiting for both answers keeps the latency of the two at
 * once (a step in turn cost the sequential p50 about 45 ms) with one order of commands.
 */
export const FIRST_ANSWERS_TOGETHER_PATCH = 'onboarding-first-answers-together';
const KEY_REJECTED_WAIT_MAX_MS = 60 * 60_000;
const waitText = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.ceil(ms / 1000)} s`);

export { ONBOARDING_PURPOSE, DEFAULT_SLOT };

export async function onboardTenant(rawInput: OnboardTenantInput): Promise<OnboardTenantResult> {
  // A continued run has its sub-account already: its input is checked alone, no step is taken again. (`?.`: a
  // start in the Web UI may send no object at all, which the check refuses rather than a TypeError failing the task.)
  if (rawInput?.continued !== undefined) {
    const input = await validateWorkflowInput('onboardTenant', rawInput, (i) => onboardingWorkflowId(i.externalRef));
    return new Onboarding(rawInput, input).run();
  }
  // Asked first, before any local activity: a patch asked right after one replays wrong when a workflow task
  // heartbeat put the activity's marker and the code's commands in two tasks (test/harness/history-split.ts).
  const together = patched(FIRST_ANSWERS_TOGETHER_PATCH);
  const { input, firstStep, plan } = await beginOnboarding(rawInput);
  return new Onboarding(rawInput, input, plan).run(firstStep, together);
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
  /** An onboarding by plan: the version its first run resolved (the plan part comes after the funding). */
  plan?: ResolvedPlan | null;
}

type FirstStep = { step: EnsureSubaccountStepResult } | { failed: unknown };
type FundWalletAnswer = Awaited<ReturnType<typeof steps.fundWallet>>;
type KeyAnswer = Awaited<ReturnType<typeof steps.issueAndVerifyTenantKey>>;
type Settled<T> = PromiseSettledResult<T | undefined>;

/**
 * A step's calls: first the answer that came earlier (Promise.allSettled), as the step's own call would have given
 * it, once; then the step itself (`attempt`). No earlier answer: the step from the start.
 */
function firstThen<T>(first: Settled<T> | undefined, attempt: () => Promise<T>): () => Promise<T> {
  let earlier = first;
  return () => {
    const settled = earlier;
    earlier = undefined;
    if (!settled) return attempt();
    return settled.status === 'fulfilled' ? Promise.resolve(settled.value as T) : Promise.reject(settled.reason);
  };
}

/** One onboarding run: its status, its funding's waits (the transfer loop's) and its steps. */
class Onboarding {
  readonly status: OnboardingStatus;
  private readonly waits: TransferWaits;
  private readonly carried: Carried | undefined;
  private readonly timings: TransferTimings;
  private readonly input: OnboardTenantInput;
  /** The plan this run carries out (null: none): the first step's answer, or carried by a continued run. */
  private readonly plan: ResolvedPlan | null;

  constructor(
    private readonly rawInput: OnboardTenantInput,
    given: OnboardTenantInput,
    plan: ResolvedPlan | null = null,
  ) {
    this.carried = carriedState<Carried>(given.continued);
    this.plan = this.carried?.plan ?? plan;
    // A plan's initial funding is the onboarding's funding: the same transfer loop, intent and idempotency.
    const input = (this.input = withPlanFunding(given, this.plan));
    const { externalRef, name } = input;
    this.timings = transferTimings(input.options);
    this.status = this.carried?.status ?? {
      externalRef,
      name,
      stage: 'recording',
      subaccountId: null,
      funding: input.fundingMicroUsd
        ? { state: 'pending', amountMicroUsd: input.fundingMicroUsd }
        : { state: 'skipped' },
      key: { state: 'pending', keyId: null, fingerprint: null },
      waitingFor: null,
      error: null,
    };
    this.waits = new TransferWaits({
      details: () => onboardingDetails(this.status),
      carried: this.carried?.transfer,
      historyEventBound: this.timings.historyEventBound,
    });
    setHandler(onboardingStatusQuery, () => this.status);
    this.waits.install({
      workflowId: onboardingWorkflowId(externalRef),
      externalRef,
      stage: () => this.status.stage,
      transferState: () => this.status.funding.state,
    });
    // A continued run has its attributes from the run before (the server copies them on).
    if (!this.carried) onboardingAttributes.start(externalRef);
    this.waits.view.refresh();
  }

  /**
   * `firstStep`: the sub-account step's answer (a new run); none for a continued run. `together`: the key's and the
   * funding's first attempts at once, then each in turn (FIRST_ANSWERS_TOGETHER_PATCH); false for a run of the code
   * before it, which took both steps side by side to their ends.
   */
  async run(firstStep?: FirstStep, together = false): Promise<OnboardTenantResult> {
    const { externalRef, name } = this.input;
    const { status } = this;
    try {
      if (firstStep && 'failed' in firstStep) throw firstStep.failed;
      let subaccountId: string;
      let funded: TransferCarried | undefined;
      if (this.carried) {
        // The sub-account and the key are done (a run continues only once the key step is): the funding goes on.
        subaccountId = this.carried.subaccountId;
        funded = await this.fund(subaccountId);
      } else {
        ({ subaccountId } = await ensureSubaccountOf(steps, { externalRef, name }, firstStep!.step));
        status.subaccountId = subaccountId;
        status.stage = 'funding_and_issuing_key';
        status.waitingFor = null;
        onboardingAttributes.subaccount(subaccountId, status.stage);
        this.waits.view.refresh();
        if (together) {
          const [keyFirst, fundFirst] = await Promise.allSettled([
            this.keyAttempt(subaccountId),
            this.input.fundingMicroUsd ? this.fundAttempt(subaccountId, this.input.fundingMicroUsd) : undefined,
          ]);
          await this.issueAndVerifyKey(subaccountId, keyFirst);
          funded = await this.fund(subaccountId, fundFirst);
        } else [funded] = await Promise.all([this.fund(subaccountId), this.issueAndVerifyKey(subaccountId)]);
      }
      if (funded) {
        const next: Carried = { status, subaccountId, transfer: funded, ...(this.plan ? { plan: this.plan } : {}) };
        return await continueCarrying(this.rawInput, next);
      }
      // With the sub-account it holds: records restored from a backup may have lost it (the same command as before).
      await steps.markTenantActive({ externalRef, subaccountId });
      // Keys are issued to active tenants only: the plan's other slots (and the rest of it) come now.
      let planOutcome: OnboardingPlanOutcome | undefined;
      if (this.plan) {
        this.show('applying_plan');
        planOutcome = await carryOutPlan(externalRef, this.plan);
      }
      this.show('active');
      const funding = fundingMade(status.funding);
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
        ...(planOutcome ? { plan: planOutcome } : {}),
      };
    } catch (error) {
      return this.fail(error);
    }
  }

  /** The funding's loop, to its end; its carried state when the run should continue as new first. */
  private async fund(subaccountId: string, first?: Settled<FundWalletAnswer>): Promise<TransferCarried | undefined> {
    const { externalRef, fundingMicroUsd: amountMicroUsd } = this.input;
    if (!amountMicroUsd) return undefined;
    const startedAtMs = Date.now();
    const ids = { externalRef, subaccountId, purpose: ONBOARDING_PURPOSE };
    const end = await runTransferLoop({
      externalRef,
      purpose: ONBOARDING_PURPOSE,
      amountMicroUsd,
      timings: this.timings,
      // The first attempt's answer when it came beside the key's (`together`), then the step itself.
      send: firstThen(first, () => this.fundAttempt(subaccountId, amountMicroUsd)),
      note: (state) => (this.status.funding = { ...state, amountMicroUsd }),
      show: (stage, waitingFor) => this.show(stage, waitingFor),
      afterRound: () => this.show(this.status.key.state === 'verified' ? 'funding' : 'funding_and_issuing_key'),
      hints: {
        parentFunded: `tenantctl parent-funded ${externalRef} --reason "..."`,
        resolveTransfer: `tenantctl resolve-transfer ${externalRef} --outcome applied|not-applied --reason "..."`,
      },
      waits: this.waits,
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

  /** One attempt of the funding step (its local activity). */
  private fundAttempt(subaccountId: string, amountMicroUsd: string): Promise<FundWalletAnswer> {
    const { externalRef } = this.input;
    return steps.fundWallet({ externalRef, subaccountId, amountMicroUsd, purpose: ONBOARDING_PURPOSE });
  }

  /** One attempt of the key step (its local activity): issue the slot's first key and verify it. */
  private keyAttempt(subaccountId: string): Promise<KeyAnswer> {
    return steps.issueAndVerifyTenantKey({
      externalRef: this.input.externalRef,
      slot: DEFAULT_SLOT,
      generation: 1,
      subaccountId,
    });
  }

  /**
   * One local activity issues the key and verifies it; at the key limit the run stops for an operator. New keys
   * the platform keeps refusing at their first use (KEY_REJECTED, final once the step's bound is spent) are no
   * reason to give up a funded tenant: the run waits visibly (needs_operator) and tries one new key per wait.
   */
  private async issueAndVerifyKey(subaccountId: string, first?: Settled<KeyAnswer>): Promise<void> {
    const { externalRef } = this.input;
    let issued: KeyAnswer | undefined;
    // The first attempt's answer when it came beside the funding's (`together`), then the step itself.
    const attempt = firstThen(first, () => this.keyAttempt(subaccountId));
    for (let round = 0; !issued; round++) {
      try {
        issued = await attempt();
      } catch (error) {
        if (failureType(error) !== FailureCode.KEY_REJECTED || !patched(KEY_REJECTED_WAIT_PATCH)) throw error;
        // The onboarding's slow retry (balanceRetryInterval, 10 m by default), doubling up to its ceiling (1 h).
        const first = msOf(this.timings.balanceRetryInterval);
        const waitMs = Math.min(
          first * 2 ** round,
          Math.max(first, this.timings.pollCeilingMs ?? KEY_REJECTED_WAIT_MAX_MS),
        );
        this.status.key = { state: 'rejected', keyId: null, fingerprint: null };
        this.show(
          'needs_operator',
          `the platform refused every new key of ${externalRef} at its first use (401), each revoked; ` +
            `the run tries another in ${waitText(waitMs)}. Check the platform's status and the ` +
            `sub-account ${subaccountId}; \`tenantctl status ${externalRef}\` shows each try`,
        );
        await sleep(waitMs);
        this.show('funding_and_issuing_key');
      }
    }
    if (issued.state === 'key_limit') {
      this.status.key = { state: 'key_limit', keyId: null, fingerprint: null };
      this.show(
        'needs_operator',
        `the tenant is at its active-key limit (${issued.activeKeys.length} active: ` +
          `${issued.activeKeys.map((k) => k.id).join(', ')}); revoke an unused key, then ` +
          `restart onboarding`,
      );
      throw codedFailure(FailureCode.API_KEY_LIMIT_REACHED, 'the tenant is at its active-key limit', {
        details: issued.activeKeys,
      });
    }
    this.status.key = { state: 'verified', keyId: issued.keyId, fingerprint: issued.fingerprint };
  }

  /** A failed or cancelled run: its records marked stopped (unless another onboarding owns them), shown, counted. */
  private async fail(error: unknown): Promise<never> {
    // Continuing as new is no failure: the next run goes on.
    if (error instanceof ContinueAsNew) throw error;
    const { externalRef, name } = this.input;
    const cancelled = isCancellation(error);
    this.status.error = failureText(error);
    const type = failureType(error);
    // A conflict means the records belong to another onboarding: leave them untouched.
    if (type !== 'EXTERNAL_REF_CONFLICT' && type !== 'TENANT_CLOSED') {
      await CancellationScope.nonCancellable(() =>
        steps.markOnboardingStopped({
          externalRef,
          name,
          outcome: cancelled ? 'cancelled' : 'failed',
          reason: this.status.error ?? 'unknown',
        }),
      );
    }
    this.show(cancelled ? 'cancelled' : 'failed');
    recordOutcome(
      'onboarding',
      cancelled ? 'cancelled' : 'failed',
      workflowInfo().startTime.getTime(),
      { externalRef, subaccountId: this.status.subaccountId, type },
      'warn',
    );
    throw error;
  }

  private show(stage: OnboardingStatus['stage'], waitingFor: string | null = null): void {
    this.status.stage = stage;
    this.status.waitingFor = waitingFor;
    onboardingAttributes.stage(stage);
    this.waits.view.refresh();
  }
}

/**
 * A new run's first step: the input's checks and the sub-account step in one local activity. A
 * refused input fails the run at once, as validateWorkflowInput does, before anything is written. A
 * failure of the sub-account step comes after the input passed the schema, so the input as given is
 * the input (the schema transforms nothing in it): it is handed on, to be thrown where the run handles
 * a failed step (records marked stopped, the failed stage shown; a cancel the same way).
 */
async function beginOnboarding(rawInput: OnboardTenantInput): Promise<{
  input: OnboardTenantInput;
  firstStep: FirstStep;
  plan: ResolvedPlan | null;
}> {
  try {
    const { input, step, plan } = await steps.beginOnboarding({
      input: rawInput,
      workflowType: workflowInfo().workflowType,
    });
    // Histories recorded before onboarding by plan have no `plan` in this step's answer.
    return { input, firstStep: { step }, plan: plan ?? null };
  } catch (error) {
    const refused = inputRefusal(error);
    if (refused) throw refused;
    // A cancel or timeout may come before the schema ran: an input that cannot be a checked one
    // (it would reach search attributes and records) fails the run as it is.
    const given = (rawInput ?? {}) as { externalRef?: unknown; name?: unknown };
    if (
      typeof given.externalRef !== 'string' ||
      given.externalRef.length > EXTERNAL_REF_MAX_LENGTH ||
      typeof given.name !== 'string' ||
      given.name.length > TENANT_NAME_MAX_LENGTH
    )
      throw error;
    return { input: rawInput, firstStep: { failed: error }, plan: null };
  }
}

/** The input with the plan's initial funding as its amount (a plan run's input names none of its own). */
function withPlanFunding(input: OnboardTenantInput, plan: ResolvedPlan | null): OnboardTenantInput {
  if (!plan) return input;
  const { fundingMicroUsd: _none, ...rest } = input;
  const amount = plan.body.initialFundingMicroUsd;
  return amount === undefined ? rest : { ...rest, fundingMicroUsd: amount };
}

/** What the result says of a funding made: its transfer id, amount and platform key (null: none was made). */
function fundingMade(funding: OnboardingStatus['funding']): OnboardTenantResult['funding'] {
  if (funding.state !== 'succeeded') return null;
  const { transferId, amountMicroUsd, idempotencyKey } = funding;
  return { transferId, amountMicroUsd, ...(idempotencyKey ? { transferKey: idempotencyKey } : {}) };
}
