import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { tenantExternalRefKey, tenantStatusKey, tenantSubaccountIdKey } from '../src/domain/search-attributes.js';
import type { OnboardingStatus } from './onboard-tenant-messages.js';

/**
 * onboardTenant's search attributes. Each upsert is a command, a history event and work for the
 * server and its visibility store, on every run. Runs started since UPSERT_CHANGED_PATCH upsert only
 * what differs from the run's current attributes, one command per step: the client already sets
 * the external ref and `recording` at start (src/client/start-onboarding.ts), so a run it starts
 * makes two upserts (sub-account with its stage, then `active`) instead of five. A run started
 * elsewhere (the Web UI) still gets every attribute. Runs started before the patch replay with one
 * upsert per attribute and stage, as they were recorded. Every patch costs a run two events (its
 * marker and Core's TemporalChangeVersion upsert), so runs since this one skip the sub-account scan
 * patch's question (onboard-tenant-subaccount.ts): their answer is always yes.
 *
 * UPSERT_CHANGED_PATCH was asked after the first local activity (input validation) resolved. Core
 * records a local activity's marker when the activity resolves; if a workflow task completes with that
 * marker before the code that follows it has answered (how, under load, is inferred: the task's
 * heartbeat at 80% of its timeout), the patch marker lands in the next task. A run with that history cannot be
 * replayed: on replay the code asks in the earlier task, where Core has not announced the marker, is
 * told no, and Core fails the task ("Non-deprecated patch marker encountered"), so the run is stuck.
 * Runs since DECIDED_AT_START_PATCH ask one question, before anything else, in the run's first
 * activation: its marker is the first command of the first task, which no local activity precedes.
 * Those runs also take fewer steps: the input's checks and the sub-account step are one local
 * activity (beginOnboarding), and so are the key's issue and verification (issueAndVerifyTenantKey).
 */
const UPSERT_CHANGED_PATCH = 'onboarding-upsert-changed-attributes';
const DECIDED_AT_START_PATCH = 'onboarding-patches-decided-at-start';

/**
 * Asked first thing in onboardTenant, before any await: true for every run started since
 * DECIDED_AT_START_PATCH, which then takes every newer branch without asking again.
 */
export function onboardingDecidedAtStart(): boolean {
  return patched(DECIDED_AT_START_PATCH);
}

type Stage = OnboardingStatus['stage'];

export interface OnboardingAttributes {
  /** The run started after UPSERT_CHANGED_PATCH or DECIDED_AT_START_PATCH (and so after every earlier onboarding patch). */
  patched: boolean;
  /** The run's first attributes: its external ref and the `recording` stage. */
  start(externalRef: string): void;
  stage(stage: Stage): void;
  /** The sub-account is known, and the stage that follows it. */
  subaccount(subaccountId: string, stage: Stage): void;
}

export function onboardingAttributes(decidedAtStart: boolean): OnboardingAttributes {
  if (!decidedAtStart && !patched(UPSERT_CHANGED_PATCH)) {
    return {
      patched: false,
      start(externalRef) {
        upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
        upsertSearchAttributes([{ key: tenantStatusKey, value: 'recording' }]);
      },
      stage(stage) {
        upsertSearchAttributes([{ key: tenantStatusKey, value: stage }]);
      },
      subaccount(subaccountId, stage) {
        upsertSearchAttributes([{ key: tenantSubaccountIdKey, value: subaccountId }]);
        upsertSearchAttributes([{ key: tenantStatusKey, value: stage }]);
      },
    };
  }
  return {
    patched: true,
    start: (externalRef) =>
      upsertChanged([
        { key: tenantExternalRefKey, value: externalRef },
        { key: tenantStatusKey, value: 'recording' },
      ]),
    stage: (stage) => upsertChanged([{ key: tenantStatusKey, value: stage }]),
    subaccount: (subaccountId, stage) =>
      upsertChanged([
        { key: tenantSubaccountIdKey, value: subaccountId },
        { key: tenantStatusKey, value: stage },
      ]),
  };
}

/** One upsert of the pairs whose value the run does not have yet; none when nothing changed. */
function upsertChanged(pairs: SearchAttributeUpdatePair[]): void {
  const current = workflowInfo().typedSearchAttributes;
  const changed = pairs.filter((pair) => current.get(pair.key) !== pair.value);
  if (changed.length > 0) upsertSearchAttributes(changed);
}
