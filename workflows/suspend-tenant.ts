/**
 * suspendTenant / resumeTenant — why: suspension takes effect at once on the platform and must be
 * on record with its reason; a resume is the review the contract asks for (a reason, and a wallet
 * balance at or above the configured floor) before the tenant's calls work again.
 *
 *   validate ─► (records lookup: unknown ref = no platform call) ─► suspend|resume on the platform ─► records + audit
 */
import { proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { LifecycleWorkflowInput } from '../src/domain/tenant-input.js';
import { tenantExternalRefKey, tenantStatusKey } from '../src/domain/search-attributes.js';
import { validateWorkflowInput } from './validate-input.js';
import { lifecycleWorkflowId } from '../src/domain/ids.js';
import { lifecycleCall } from './activity-policies.js';

const acts = proxyActivities<Activities>(lifecycleCall);

export interface LifecycleResult {
  externalRef: string;
  subaccountId: string;
  status: 'suspended' | 'active';
}

export async function suspendTenant(rawInput: LifecycleWorkflowInput): Promise<LifecycleResult> {
  const input = await validateWorkflowInput('lifecycle', rawInput, (i) =>
    lifecycleWorkflowId('suspend', i.externalRef),
  );
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]);
  const { subaccountId } = await acts.suspendTenantOnPlatform({ ...input, runKey: workflowInfo().firstExecutionRunId });
  upsertSearchAttributes([{ key: tenantStatusKey, value: 'suspended' }]);
  return { externalRef: input.externalRef, subaccountId, status: 'suspended' };
}

export async function resumeTenant(rawInput: LifecycleWorkflowInput): Promise<LifecycleResult> {
  const input = await validateWorkflowInput('lifecycle', rawInput, (i) => lifecycleWorkflowId('resume', i.externalRef));
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]);
  const { subaccountId } = await acts.resumeTenantOnPlatform({ ...input, runKey: workflowInfo().firstExecutionRunId });
  upsertSearchAttributes([{ key: tenantStatusKey, value: 'active' }]);
  return { externalRef: input.externalRef, subaccountId, status: 'active' };
}
