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
  const carried = input.continued as Carried | undefined;
  if (!carried) upsertSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]);
  const status: KeyIssueStatus = carried?.status ?? {
    externalRef: input.externalRef,
    slot: input.slot,
    stage: 'starting',
    generation: null,
    keyId: null,
    fingerprint: null,
    activeKeys: [],
    notes: [],
  };
  const waits = new Waits({ tenantStatus: (stage) => `key_issue:${stage}` }, carried?.wait ?? null);
  let abortBy: { operator: string; reason: string } | null = null;
  const decisions = { retry: false, aborted: () => abortBy !== null };
  setHandler(keyIssueStatusQuery, () => status);
  const applicable = installDecisions<KeyIssueStage, 'retryKeyCreate' | 'abortKeyIssue'>({
    table: { retryKeyCreate: ['key_limit'], abortKeyIssue: ['key_limit'] },
    updates: { retryKeyCreate: retryKeyIssueUpdate, abortKeyIssue: abortKeyIssueUpdate },
    stage: () => status.stage,
    settled: () =>
      abortBy !== null
        ? `not applicable: abortKeyIssue was accepted (by ${abortBy.operator}), the issue is being given up`
        : null,
    notAt: () => `not applicable at stage ${status.stage} (only at key_limit)`,
    take: (name, by) => {
      if (name === 'abortKeyIssue') {
        abortBy = by;
        return 'the issue is given up; nothing was created';
      }
      decisions.retry = true;
      return 'the key create is tried again now';
    },
  });

  let begun: { subaccountId: string; generation: number };
  if (carried) begun = carried.begun;
  else {
    const found = await steps.beginSlotKeyIssue({ externalRef: input.externalRef, slot: input.slot });
    if (found.state === 'exists') {
      Object.assign(status, {
        stage: 'existing',
        generation: found.generation,
        keyId: found.keyId,
        fingerprint: found.fingerprint,
      });
      return { externalRef: input.externalRef, slot: input.slot, outcome: 'existing', ...pick(found) };
    }
    begun = { subaccountId: found.subaccountId, generation: found.generation };
  }
  status.generation = begun.generation;
  const keyRef = { externalRef: input.externalRef, slot: input.slot, generation: begun.generation };
  const retryMs = msOf(input.options?.keyLimitRetryInterval ?? DEFAULT_KEY_LIMIT_RETRY);
  const backoff = new Backoff(
    retryMs,
    input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling),
    carried?.polls ?? 0,
  );
  let proven = false;
  const issued = await waitForKeySlot({
    waits,
    backoff,
    decisions,
    applicable,
    create: () => {
      status.stage = 'creating_key';
      // One step issues and proves the key (issue 44): a new key refused at its first use is revoked and replaced
      // by the step's next attempt, as in onboarding, instead of ending the run once stored.
      if (patched(SLOT_ISSUE_PROVES_PATCH)) {
        proven = true;
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
    continueAsNew: async () => {
      await handlersFinished();
      const next: Carried = { begun, status, wait: waits.current, polls: backoff.polls };
      return continueAsNew<typeof issueTenantKey>({
        ...rawInput,
        continued: next as unknown as Record<string, unknown>,
      });
    },
  });
  if (issued === 'aborted') {
    const by: { operator: string; reason: string } = abortBy!;
    await steps.abandonSlotKeyIssue({ ...keyRef, actor: `operator:${by.operator}`, reason: by.reason });
    status.stage = 'aborted';
    waits.leave('aborted');
    throw codedFailure(
      FailureCode.API_KEY_LIMIT_REACHED,
      `issue of slot ${input.slot} for ${input.externalRef} aborted at the active-key ` +
        `limit by ${by.operator}: ${by.reason}`,
    );
  }
  Object.assign(status, { keyId: issued.keyId, fingerprint: issued.fingerprint });
  if (waits.current) waits.leave('issued');
  if (!proven) {
    status.stage = 'verifying';
    await steps.verifyTenantKey(keyRef);
  }
  status.stage = 'issued';
  return {
    externalRef: input.externalRef,
    slot: input.slot,
    outcome: 'issued',
    generation: begun.generation,
    keyId: status.keyId!,
    fingerprint: status.fingerprint!,
  };
}

/** What a run continued as new hands to the next: the issue begun, where it stands, the wait. */
interface Carried {
  begun: { subaccountId: string; generation: number };
  status: KeyIssueStatus;
  wait: WaitView | null;
  polls: number;
}

function pick(found: { generation: number; keyId: string; fingerprint: string }) {
  return { generation: found.generation, keyId: found.keyId, fingerprint: found.fingerprint };
}
