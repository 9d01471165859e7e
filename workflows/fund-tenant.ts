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
  ContinueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { FundTenantInput, ParsedFundTenantInput } from '../src/domain/top-up-input.js';
import { platformTaskQueue, topUpWorkflowId } from '../src/domain/ids.js';
import { tenantExternalRefKey, tenantStatusKey } from '../src/domain/search-attributes.js';
import { topUpStatusQuery, type FundTenantResult, type TopUpStage, type TopUpStatus } from './fund-tenant-messages.js';
import { recordCapRefusal, recordOutcome } from './outcomes.js';
import { validateWorkflowInput } from './validate-input.js';
import { databaseStep } from './activity-policies.js';
import {
  carriedState,
  continueCarrying,
  failureType,
  FUNDING_WAIT_STAGE_PATCH,
  runTransferLoop,
  transferTimings,
  TransferWaits,
  type TransferCarried,
  type TransferTimings,
} from './transfer-loop.js';

export * from './fund-tenant-messages.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export async function fundTenant(rawInput: FundTenantInput): Promise<FundTenantResult> {
  const input = await validateWorkflowInput('fundTenant', rawInput, (i) =>
    topUpWorkflowId(i.externalRef, i.idempotencyKey),
  );
  return new TopUp(rawInput, input).run();
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

/** One top-up run: its status, its waits (the transfer loop's) and its steps. */
class TopUp {
  readonly status: TopUpStatus;
  private readonly waits: TransferWaits;
  private readonly carried: Carried | undefined;
  private readonly timings: TransferTimings;
  private readonly startedAtMs: number;
  /** The transfer intent's purpose, once recorded (a cancel gives its reservation back). */
  private purpose: string | null;
  /** The platform's idempotency key of the transfer made (its result carries it). */
  private transferKey: string | undefined;

  constructor(
    private readonly rawInput: FundTenantInput,
    private readonly input: ParsedFundTenantInput,
  ) {
    const { externalRef, idempotencyKey, amountMicroUsd, kind } = input;
    this.carried = carriedState<Carried>(input.continued);
    this.startedAtMs = this.carried?.startedAtMs ?? Date.now();
    this.timings = transferTimings(input.options);
    this.purpose = this.carried?.purpose ?? null;
    this.status = this.carried?.status ?? {
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
    this.waits = new TransferWaits({
      details: () => this.details(),
      carried: this.carried?.transfer,
      historyEventBound: this.timings.historyEventBound,
    });
    setHandler(topUpStatusQuery, () => this.status);
    this.waits.install({
      workflowId: topUpWorkflowId(externalRef, idempotencyKey),
      externalRef,
      stage: () => this.status.stage,
      transferState: () => this.status.transferState ?? 'unknown',
    });
    // A continued run has its attributes from the run before (the server copies them on).
    if (!this.carried) {
      upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
      this.show('recording');
    } else this.waits.view.refresh();
  }

  async run(): Promise<FundTenantResult> {
    try {
      const recorded = this.carried
        ? ({ state: 'recorded', purpose: this.carried.purpose, subaccountId: this.carried.subaccountId } as const)
        : await steps.recordTopUp(this.input);
      if (recorded.state === 'skipped') {
        this.show('skipped');
        return this.result('skipped', recorded.why);
      }
      if (recorded.state === 'cap_refused') {
        this.status.transferState = 'refused';
        this.show('cap_refused');
        recordCapRefusal(recorded.cap, this.input.kind);
        recordOutcome('top-up', 'cap_refused', this.startedAtMs, { ...this.ids(), cap: recorded.cap }, 'warn');
        return this.result('cap_refused', recorded.cap);
      }
      this.purpose = recorded.purpose;
      return await this.transfer(recorded.purpose, recorded.subaccountId);
    } catch (error) {
      return this.fail(error);
    }
  }

  /** The transfer loop to its end; a continuation carries the intent on. */
  private async transfer(purpose: string, subaccountId: string): Promise<FundTenantResult> {
    const { externalRef, idempotencyKey, amountMicroUsd, kind } = this.input;
    const transfer = { externalRef, subaccountId, amountMicroUsd, purpose };
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
    if (!this.carried) this.show('transferring');
    const end = await runTransferLoop({
      externalRef,
      purpose,
      amountMicroUsd,
      timings: this.timings,
      send: () => transferOn.fundWallet(transfer),
      note: (state) => {
        this.status.transferState = state.state === 'insufficient_balance' ? 'pending' : state.state;
      },
      show: (stage, waitingFor) => this.show(stage, waitingFor),
      afterRound: () => {
        if (this.status.stage !== 'transferring') this.show('transferring');
      },
      hints: {
        parentFunded: `tenantctl parent-funded --reason "..."`,
        resolveTransfer:
          `tenantctl resolve-transfer ${externalRef} --key ${idempotencyKey} --outcome applied|not-applied ` +
          `--reason "..."`,
      },
      onInsufficientBalance: () => this.onInsufficientBalance(purpose),
      waits: this.waits,
    });
    switch (end.state) {
      case 'succeeded':
        this.status.transferId = end.transferId;
        this.transferKey = end.idempotencyKey;
        this.show('succeeded');
        recordOutcome('top-up', 'succeeded', this.startedAtMs, {
          ...this.ids(),
          transferId: end.transferId,
          resolution: end.resolution,
        });
        return this.result('succeeded');
      case 'failed':
        throw ApplicationFailure.nonRetryable(`the platform refused the top-up (${end.code})`, end.code);
      case 'stopped':
        this.show('skipped');
        recordOutcome('top-up', 'parent_insufficient', this.startedAtMs, this.ids(), 'warn');
        return this.result('skipped', 'parent_insufficient');
      case 'continue': {
        const next: Carried = {
          status: this.status,
          purpose,
          subaccountId,
          startedAtMs: this.startedAtMs,
          transfer: end.carried,
        };
        return continueCarrying(this.rawInput, next);
      }
    }
  }

  /** A top-up waits for the parent's funds; an auto top-up gives its reservation back and stops. */
  private async onInsufficientBalance(purpose: string): Promise<'wait' | 'stop'> {
    const { externalRef } = this.input;
    await steps.noteParentInsufficient({ externalRef });
    if (this.input.kind !== 'auto') return 'wait';
    // One parent-wide state instead of a retry per tenant: the reservation is given back,
    // and the next sweep after `tenantctl parent-funded` starts afresh.
    this.status.transferState = (await steps.cancelTopUp({ externalRef, purpose }))?.state ?? 'cancelled';
    return 'stop';
  }

  /** A failed or cancelled run: a cancel gives the reservation back; both are shown and counted. */
  private async fail(error: unknown): Promise<never> {
    // Continuing as new is no failure: the next run goes on.
    if (error instanceof ContinueAsNew) throw error;
    const cancelled = isCancellation(error);
    this.status.error = error instanceof Error ? error.message : String(error);
    if (cancelled && this.purpose) {
      const topUp = { externalRef: this.input.externalRef, purpose: this.purpose };
      await CancellationScope.nonCancellable(() => steps.cancelTopUp(topUp));
    }
    this.show(cancelled ? 'cancelled' : 'failed');
    const outcome = cancelled ? 'cancelled' : 'failed';
    recordOutcome('top-up', outcome, this.startedAtMs, { ...this.ids(), type: failureType(error) }, 'warn');
    throw error;
  }

  private show(stage: TopUpStage, waitingFor: string | null = null): void {
    this.status.stage = stage;
    this.status.waitingFor = waitingFor;
    // Set when it changes (a wait's every poll set it again); runs started before this change set it each time.
    const unchanged = workflowInfo().typedSearchAttributes.get(tenantStatusKey) === stage;
    if (!(unchanged && patched(FUNDING_WAIT_STAGE_PATCH)))
      upsertSearchAttributes([{ key: tenantStatusKey, value: stage }]);
    this.waits.view.refresh();
  }

  /** The run's own lines of its current details in the Web UI. */
  private details(): string[] {
    const { status } = this;
    const { kind, amountMicroUsd, externalRef, idempotencyKey } = this.input;
    const lines = [
      `**${status.stage}** — ${kind} of ${amountMicroUsd} micro-USD for \`${externalRef}\` (key \`${idempotencyKey}\`)`,
      `transfer: ${status.transferState ?? 'not yet recorded'}${status.transferId ? ` ${status.transferId}` : ''}`,
    ];
    if (status.waitingFor) lines.push(`waiting: ${status.waitingFor}`);
    if (status.error) lines.push(`error: ${status.error}`);
    return lines;
  }

  private ids() {
    const { externalRef, idempotencyKey, kind } = this.input;
    return { externalRef, idempotencyKey, kind };
  }

  private result(state: FundTenantResult['state'], refusedBy: string | null = null): FundTenantResult {
    const { externalRef, idempotencyKey, amountMicroUsd, kind } = this.input;
    const { transferId } = this.status;
    const made = this.transferKey ? { transferKey: this.transferKey } : {};
    return { externalRef, idempotencyKey, amountMicroUsd, kind, state, transferId, ...made, refusedBy };
  }
}
