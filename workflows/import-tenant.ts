/**
 * importTenant — why: a parent adopting the orchestrator already has tenants (made by an earlier
 * script or by hand). Importing one records it exactly as onboarding would have (unique ref, the
 * sub-account id), so every later action maps through our records; its existing keys become
 * `unmanaged` records (we never saw their tokens) for an adoption rotation to replace, and its
 * balance becomes the ledger's opening entry, so drift explains the money already there.
 *
 *   validate ─► readSubaccountForImport (platform queue: ref and status checked again, active keys)
 *   ─► readWalletForImport (platform queue) ─► recordImportedTenant (one transaction, audited;
 *   a second import of the same sub-account finds it and writes nothing)
 *
 * One run per ref: the workflow id is `import:<externalRef>`. Reads only on the platform: nothing to
 * undo when it fails.
 */
import { proxyActivities, proxyLocalActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { importWorkflowId, platformTaskQueue } from '../src/domain/ids.js';
import type { ImportTenantInput, ImportTenantResult, ParsedImportTenantInput } from '../src/domain/import-input.js';
import { tenantExternalRefKey, tenantStatusKey, tenantSubaccountIdKey } from '../src/domain/search-attributes.js';
import { validateWorkflowInput } from './validate-input.js';
import { databaseStep, platformCall } from './activity-policies.js';

// A conflict is a coded, non-retryable failure: the run fails at once and nothing was written.
const db = proxyLocalActivities<Activities>(databaseStep);

export async function importTenant(rawInput: ImportTenantInput): Promise<ImportTenantResult> {
  const input: ParsedImportTenantInput = await validateWorkflowInput('importTenant', rawInput, (i) =>
    importWorkflowId(i.externalRef),
  );
  const platform = proxyActivities<Activities>(platformCall(platformTaskQueue(workflowInfo().taskQueue)));
  upsertSearchAttributes([
    { key: tenantExternalRefKey, value: input.externalRef },
    { key: tenantSubaccountIdKey, value: input.subaccountId },
  ]);
  const subaccount = await platform.readSubaccountForImport({
    subaccountId: input.subaccountId,
    externalRef: input.externalRef,
    refSource: input.refSource,
  });
  const wallet = await platform.readWalletForImport({ subaccountId: input.subaccountId });
  const recorded = await db.recordImportedTenant({
    externalRef: input.externalRef,
    name: input.name,
    subaccountId: input.subaccountId,
    refSource: input.refSource,
    requestedBy: input.requestedBy ?? 'import',
    subaccount,
    wallet,
  });
  upsertSearchAttributes([{ key: tenantStatusKey, value: subaccount.status }]);
  return {
    externalRef: input.externalRef,
    subaccountId: input.subaccountId,
    outcome: recorded.outcome,
    status: subaccount.status,
    unmanagedKeys: recorded.unmanagedKeys,
    openingBalanceMicroUsd: recorded.openingBalanceMicroUsd,
  };
}
