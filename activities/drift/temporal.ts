import type { Client } from '@temporalio/client';
import { tenantExternalRefKey } from '../../src/domain/search-attributes.js';

/**
 * What only Temporal knows: which tenants have a workflow running, and which rotation schedules
 * exist. Read through a Client built on the worker's own connection (ActivityDeps.drift.temporal).
 */
export async function runningTenantWorkflows(
  client: Client,
  refs: string[],
): Promise<Array<{ externalRef: string; reason: string }>> {
  if (refs.length === 0) return [];
  // Every workflow that works on one tenant carries its TenantExternalRef (set by its starter and by the workflow
  // itself), and nothing else does: the tag, not a list of workflow types, says which runs make a tenant busy.
  // External refs are [A-Za-z0-9._:-] (validated everywhere), so quoting them needs no escaping.
  const query = `ExecutionStatus = "Running" AND TenantExternalRef IN (${refs.map((r) => `"${r}"`).join(', ')})`;
  const found: Array<{ externalRef: string; reason: string }> = [];
  for await (const execution of client.workflow.list({ query })) {
    const externalRef = execution.typedSearchAttributes.get(tenantExternalRefKey);
    if (externalRef) found.push({ externalRef, reason: `${execution.type} running (${execution.workflowId})` });
  }
  return found;
}

/** Ids of rotation schedules in effect (paused ones do not rotate anything, so they do not count). */
export async function activeRotationScheduleIds(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const schedule of client.schedule.list()) {
    if (!schedule.scheduleId.startsWith('rotation:') && !schedule.scheduleId.startsWith('rotation-fleet:')) continue;
    if (!schedule.state.paused) ids.push(schedule.scheduleId);
  }
  return ids;
}
