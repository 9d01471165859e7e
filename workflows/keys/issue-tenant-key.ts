/**
 * issueTenantKey — why: a tenant may keep a key per workload and environment (contract, authentication rule 7).
 * Each slot is issued like onboarding's `default` key: created with a name that finds a lost response, sealed the
 * moment it arrives, verified with one call, recorded. At the active-key limit the run waits (the same actionable
 * state as rotation: `retryKeyCreate` after revoking an unused key, or `abortKeyIssue`), retrying on a timer.
 *
 *   validate ─► slot has an active key? ─yes─► done (one key per slot, however often asked)
 *                      │no
 *                      └─► create+seal ─► key_limit? ─► wait (retry / abort / timer) ─► create+seal
 *                                      └─► verify ─► issued
 *
 * The run's state is one `KeyIssue` object (as closeTenant's `Close`): its query and decisions are installed in
 * its constructor, each handler calling a method; each step is a method, the flow `run()`.
 */
import { continueAsNew, patched, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { codedFailure, FailureCode } from '../../src/domain/failures.js';
import { keyIssueWorkflowId } from '../../src/domain/ids.js';
import { keyLimitWaitText } from '../../src/domain/key-limit-wait.js';
import type { IssueTenantKeyInput } from '../../src/domain/key-slot-input.js';
import { tenantExternalRefKey } from '../../src/domain/search-attributes.js';
import { databaseStep } from '../activity-policies.js';
import { installDecisions } from '../decision-table.js';
import {
  abortKeyIssueUpdate,
  keyIssueStatusQuery,
  retryKeyIssueUpdate,
  type KeyIssueStage,
  type KeyIssueStatus,
} from './key-slot-messages.js';
import { msOf, validateWorkflowInput } from '../validate-input.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from '../waits.js';
import { waitForKeySlot } from './key-slot-wait.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export interface IssueTenantKeyResult {
  externalRef: string;
  slot: string;
  outcome: 'issued' | 'existing';
  generation: number;
  keyId: string;
  fingerprint: string;
}

const DEFAULT_KEY_LIMIT_RETRY = '10m';

/** The slot's key is issued and proven by one step (issueAndVerifyTenantKey), as onboarding's is. */
export const SLOT_ISSUE_PROVES_PATCH = 'slot-issue-proves-in-one-step';

export async function issueTenantKey(rawInput: IssueTenantKeyInput): Promise<IssueTenantKeyResult> {
  const input = await validateWorkflowInput('issueTenantKey', rawInput, (i) =>
    keyIssueWorkflowId(i.externalRef, i.slot),
  );
  return new KeyIssue(rawInput, input).run();
}

type AbortBy = { operator: string; reason: string };
type IssueTenantKeyRequest = Awaited<ReturnType<typeof validateWorkflowInput<'issueTenantKey'>>>;

/** One issue run: its status, its two decisions (one-line handlers), and each step as a method. */
class KeyIssue {
  private readonly carried: Carried | undefined;
  private readonly status: KeyIssueStatus;
  private readonly waits: Waits;
  private readonly decisions = { retry: false, aborted: () => this.abortBy !== null };
  private readonly applicable: () => readonly string[];
  private abortBy: AbortBy | null = null;
  /** The key was issued and proven by one step (SLOT_ISSUE_PROVES_PATCH): no verify after it. */
  private proven = false;

  constructor(
    private readonly rawInput: IssueTenantKeyInput,
    private readonly input: IssueTenantKeyRequest,
  ) {
    const carried = (this.carried = input.continued as Carried | undefined);
    if (!carried) upsertSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]);
    this.status = carried?.status ?? {
      externalRef: input.externalRef,
      slot: input.slot,
      stage: 'starting',
      generation: null,
      keyId: null,
      fingerprint: null,
      activeKeys: [],
      notes: [],
    };
    this.waits = new Waits({ tenantStatus: (stage) => `key_issue:${stage}` }, carried?.wait ?? null);
    setHandler(keyIssueStatusQuery, () => this.status);
    this.applicable = installDecisions<KeyIssueStage, 'retryKeyCreate' | 'abortKeyIssue'>({
      table: { retryKeyCreate: ['key_limit'], abortKeyIssue: ['key_limit'] },
      updates: { retryKeyCreate: retryKeyIssueUpdate, abortKeyIssue: abortKeyIssueUpdate },
      stage: () => this.status.stage,
      settled: () => this.settledRefusal(),
      notAt: () => `not applicable at stage ${this.status.stage} (only at key_limit)`,
      take: (name, by) => this.take(name, by),
    });
  }

  async run(): Promise<IssueTenantKeyResult> {
    const { status } = this;
    const begun = this.carried?.begun ?? (await this.begin());
    if (begun === 'existing') return this.result('existing');
    status.generation = begun.generation;
    const issued = await this.create(begun);
    if (issued === 'aborted') return this.abort(begun);
    Object.assign(status, { keyId: issued.keyId, fingerprint: issued.fingerprint });
    if (this.waits.current) this.waits.leave('issued');
    if (!this.proven) {
      status.stage = 'verifying';
      await steps.verifyTenantKey(this.keyRef(begun));
    }
    status.stage = 'issued';
    return this.result('issued');
  }

  /** The slot's issue begun, or 'existing' when the slot has an active key (one key per slot). */
  private async begin(): Promise<Begun | 'existing'> {
    const found = await steps.beginSlotKeyIssue({ externalRef: this.input.externalRef, slot: this.input.slot });
    if (found.state === 'exists') {
      Object.assign(this.status, {
        stage: 'existing',
        generation: found.generation,
        keyId: found.keyId,
        fingerprint: found.fingerprint,
      });
      return 'existing';
    }
    return { subaccountId: found.subaccountId, generation: found.generation };
  }

  private keyRef(begun: Begun) {
    return { externalRef: this.input.externalRef, slot: this.input.slot, generation: begun.generation };
  }

  /** Creates (and proves) the key, waiting at the active-key limit; past the history bound it continues as new. */
  private create(begun: Begun) {
    const { input, status } = this;
    const keyRef = this.keyRef(begun);
    const retryMs = msOf(input.options?.keyLimitRetryInterval ?? DEFAULT_KEY_LIMIT_RETRY);
    const backoff = new Backoff(
      retryMs,
      input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling),
      this.carried?.polls ?? 0,
    );
    return waitForKeySlot({
      waits: this.waits,
      backoff,
      decisions: this.decisions,
      applicable: this.applicable,
      create: () => {
        status.stage = 'creating_key';
        // One step issues and proves the key (issue 44): a new key refused at its first use is revoked and replaced
        // by the step's next attempt, as in onboarding, instead of ending the run once stored.
        if (patched(SLOT_ISSUE_PROVES_PATCH)) {
          this.proven = true;
          return steps.issueAndVerifyTenantKey({ ...keyRef, subaccountId: begun.subaccountId });
        }
        return steps.issueTenantKey({ ...keyRef, subaccountId: begun.subaccountId });
      },
      atLimit: (limit, waitMs) => {
        Object.assign(status, { stage: 'key_limit', activeKeys: limit.activeKeys });
        return keyLimitWaitText({
          run: { kind: 'key-issue', externalRef: input.externalRef, slot: input.slot },
          activeKeys: limit.activeKeys,
          retryInMs: waitMs,
        });
      },
      full: () => historyFull(input.options?.historyEventBound),
      continueAsNew: () => this.continueRun(begun, backoff),
    });
  }

  private async continueRun(begun: Begun, backoff: Backoff): Promise<never> {
    await handlersFinished();
    const next: Carried = { begun, status: this.status, wait: this.waits.current, polls: backoff.polls };
    return continueAsNew<typeof issueTenantKey>({
      ...this.rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  }

  /** Aborted at the key limit by an operator: the issue abandoned, the run failed. */
  private async abort(begun: Begun): Promise<never> {
    const { input } = this;
    const by: AbortBy = this.abortBy!;
    await steps.abandonSlotKeyIssue({ ...this.keyRef(begun), actor: `operator:${by.operator}`, reason: by.reason });
    this.status.stage = 'aborted';
    this.waits.leave('aborted');
    throw codedFailure(
      FailureCode.API_KEY_LIMIT_REACHED,
      `issue of slot ${input.slot} for ${input.externalRef} aborted at the active-key ` +
        `limit by ${by.operator}: ${by.reason}`,
    );
  }

  private settledRefusal(): string | null {
    return this.abortBy !== null
      ? `not applicable: abortKeyIssue was accepted (by ${this.abortBy.operator}), the issue is being given up`
      : null;
  }

  private take(name: 'retryKeyCreate' | 'abortKeyIssue', by: AbortBy): string {
    if (name === 'abortKeyIssue') {
      this.abortBy = by;
      return 'the issue is given up; nothing was created';
    }
    this.decisions.retry = true;
    return 'the key create is tried again now';
  }

  private result(outcome: 'issued' | 'existing'): IssueTenantKeyResult {
    const { status } = this;
    return {
      externalRef: this.input.externalRef,
      slot: this.input.slot,
      outcome,
      generation: status.generation!,
      keyId: status.keyId!,
      fingerprint: status.fingerprint!,
    };
  }
}

type Begun = { subaccountId: string; generation: number };

/** What a run continued as new hands to the next: the issue begun, where it stands, the wait. */
interface Carried {
  begun: Begun;
  status: KeyIssueStatus;
  wait: WaitView | null;
  polls: number;
}
