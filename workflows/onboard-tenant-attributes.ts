import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { tenantExternalRefKey, tenantStatusKey, tenantSubaccountIdKey } from '../src/domain/search-attributes.js';
import type { OnboardingStatus } from './onboard-tenant-messages.js';

/**
 * onboardTenant's search attributes. Each upsert is a command, a history event and work for the
 * server and its visibility store, on every run: a run upserts only what differs from its current
 * attributes, one command per step. The client already sets the external ref and `recording` at start
 * (src/client/tenants/start-onboarding.ts), so a run it starts makes two upserts (sub-account with its stage,
 * then `active`). A run started elsewhere (the Web UI) still gets every attribute.
 */
type Stage = OnboardingStatus['stage'];

export const onboardingAttributes = {
  /** The run's first attributes: its external ref and the `recording` stage. */
  start(externalRef: string): void {
    upsertChanged([
      { key: tenantExternalRefKey, value: externalRef },
      { key: tenantStatusKey, value: 'recording' },
    ]);
  },
  stage(stage: Stage): void {
    upsertChanged([{ key: tenantStatusKey, value: stage }]);
  },
  /** The sub-account is known, and the stage that follows it. */
  subaccount(subaccountId: string, stage: Stage): void {
    upsertChanged([
      { key: tenantSubaccountIdKey, value: subaccountId },
      { key: tenantStatusKey, value: stage },
    ]);
  },
};

/** One upsert of the pairs whose value the run does not have yet; none when nothing changed. */
function upsertChanged(pairs: SearchAttributeUpdatePair[]): void {
  const current = workflowInfo().typedSearchAttributes;
  const changed = pairs.filter((pair) => current.get(pair.key) !== pair.value);
  if (changed.length > 0) upsertSearchAttributes(changed);
}
