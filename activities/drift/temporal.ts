import {
  ScheduleNotFoundError,
  WorkflowNotFoundError,
  type Client,
  type ScheduleSpecDescription,
} from '@temporalio/client';
import { tenantExternalRefKey, tenantSubaccountIdKey } from '../../src/domain/search-attributes.js';

/**
 * What only Temporal knows: which tenants have a workflow running, and which rotation schedules
 * exist (and at what interval). Read through a Client built on the worker's own connection
 * (ActivityDeps.drift.temporal).
 */
export async function runningTenantWorkflows(
  client: Client,
  refs: string[],
): Promise<Array<{ externalRef: string; reason: string; workflowId: string }>> {
  if (refs.length === 0) return [];
  // Every workflow that works on one tenant carries its TenantExternalRef (set by its starter and by the workflow
  // itself), and nothing else does: the tag, not a list of workflow types, says which runs make a tenant busy.
  // External refs are [A-Za-z0-9._:-] (validated everywhere), so quoting them needs no escaping.
  const query = `ExecutionStatus = "Running" AND TenantExternalRef IN (${refs.map((r) => `"${r}"`).join(', ')})`;
  const found: Array<{ externalRef: string; reason: string; workflowId: string }> = [];
  for await (const execution of client.workflow.list({ query })) {
    const externalRef = execution.typedSearchAttributes.get(tenantExternalRefKey);
    if (externalRef)
      found.push({
        externalRef,
        reason: `${execution.type} running (${execution.workflowId})`,
        workflowId: execution.workflowId,
      });
  }
  return found;
}

export { endedRunStatus } from '../../src/infra/records-witness.js';

/** A rotation schedule as a listing (or a describe) shows it: whether it is paused and its one interval. */
export interface RotationScheduleSeen {
  scheduleId: string;
  paused: boolean;
  /** The schedule's only interval in ms; null when it shows none, several, or calendars as well. */
  everyMs: number | null;
}

function onlyIntervalMs(spec: ScheduleSpecDescription | undefined): number | null {
  if (!spec || (spec.calendars?.length ?? 0) > 0 || spec.intervals?.length !== 1) return null;
  return spec.intervals[0]!.every;
}

/**
 * Every rotation schedule (a tenant slot's `rotation:` and a fleet's `rotation-fleet:`), in one listing of the
 * namespace's schedules: a check reads Temporal once for them all, never once per tenant or slot.
 */
export async function listRotationSchedules(client: Client): Promise<RotationScheduleSeen[]> {
  const seen: RotationScheduleSeen[] = [];
  for await (const schedule of client.schedule.list()) {
    if (!schedule.scheduleId.startsWith('rotation:') && !schedule.scheduleId.startsWith('rotation-fleet:')) continue;
    seen.push({
      scheduleId: schedule.scheduleId,
      paused: schedule.state.paused,
      everyMs: onlyIntervalMs(schedule.spec),
    });
  }
  return seen;
}

/** Ids of rotation schedules in effect (paused ones do not rotate anything, so they do not count). */
export function activeRotationScheduleIds(schedules: RotationScheduleSeen[]): string[] {
  return schedules.filter((s) => !s.paused).map((s) => s.scheduleId);
}

/**
 * One schedule read now (a listing is eventually consistent and a check's listing was made when it began): how
 * a schedule the listing showed differing from a plan is confirmed before it is reported. Null: no such schedule.
 */
export async function describeRotationSchedule(
  client: Client,
  scheduleId: string,
): Promise<RotationScheduleSeen | null> {
  try {
    const description = await client.schedule.getHandle(scheduleId).describe();
    return { scheduleId, paused: description.state.paused, everyMs: onlyIntervalMs(description.spec) };
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return null;
    throw error;
  }
}

/** What the tenant's completed runs of ours did last: whether its onboarding completed, and its last lifecycle run. */
export interface TenantLifecycle {
  onboarded: boolean;
  /** The sub-account its completed onboarding made (its TenantSubaccountId); null when none shows one. */
  subaccountId: string | null;
  /** The state the last completed suspend, resume or close left it in; null when none completed. */
  last: 'active' | 'suspended' | 'closed' | null;
}

const LIFECYCLE_STATE: Record<string, TenantLifecycle['last']> = {
  suspendTenant: 'suspended',
  resumeTenant: 'active',
  closeTenant: 'closed',
};

/**
 * One tenant's completed onboarding and lifecycle runs, from Temporal visibility: the evidence that lets drift make
 * our record follow the platform when the records went back in time (a restore) and a run of ours moved it since.
 */
export async function tenantLifecycle(client: Client, externalRef: string): Promise<TenantLifecycle> {
  const query =
    `ExecutionStatus = "Completed" AND TenantExternalRef = "${externalRef}" AND WorkflowType IN ` +
    `("onboardTenant", "suspendTenant", "resumeTenant", "closeTenant")`;
  let onboarded = false;
  let subaccountId: string | null = null;
  let last: { state: TenantLifecycle['last']; at: number } | null = null;
  for await (const execution of client.workflow.list({ query })) {
    if (execution.type === 'onboardTenant') {
      onboarded = true;
      subaccountId ??= execution.typedSearchAttributes.get(tenantSubaccountIdKey) ?? null;
    }
    const state = LIFECYCLE_STATE[execution.type];
    const at = execution.closeTime?.getTime() ?? 0;
    if (state && (!last || at > last.at)) last = { state, at };
  }
  return { onboarded, subaccountId, last: last?.state ?? null };
}

/**
 * The platform's transfer id a completed run of ours reports for the transfer it owned (an onboarding's funding, a
 * top-up's transfer), read from the run itself: the evidence that settles an intent the records went back on when
 * the wallet can no longer be read (the tenant was closed since). Null when the run is not completed or made none.
 */
export async function transferMadeByRun(client: Client, workflowId: string): Promise<string | null> {
  try {
    const handle = client.workflow.getHandle(workflowId);
    if ((await handle.describe()).status.name !== 'COMPLETED') return null;
    const result = (await handle.result()) as {
      funding?: { transferId: string | null } | null;
      state?: string;
      transferId?: string | null;
    } | null;
    return result?.funding?.transferId ?? (result?.state === 'succeeded' ? (result.transferId ?? null) : null);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}
