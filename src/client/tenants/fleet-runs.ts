import type { Client } from '@temporalio/client';
import type { PlanRef } from '../../domain/plan-ref.js';
import { rolloutStatusQuery } from '../../../workflows/plan-rollout-messages.js';
import type { WaitView } from '../current-wait.js';
import { queryOrNull } from '../query-run.js';
import { readRun } from '../run-status.js';

/**
 * The fleet runs a tenant is part of (issue 47), for the tenant view: each run that started one of the tenant's
 * runs and is no run of the tenant itself (a plan rollout `plan-rollout:<name>@<version>` that started its
 * convergence, the fleet rotation that started a rotation, the auto top-up sweep that started a top-up), and each
 * running rollout of the tenant's plan that has not reached it yet. Each with its status and current wait (a
 * paused rollout waits for `resumeRollout`).
 */
export interface FleetRunView {
  workflowId: string;
  /** The workflow type: rolloutPlan, rotateFleet, autoTopUpSweep, … */
  type: string;
  status: string;
  /** How the tenant is in it: the tenant's runs it started, or that it will reach the tenant. */
  via: string;
  waiting: WaitView | null;
}

/** At most this many running rollouts are read for whether they will reach the tenant. */
const ROLLOUTS_READ = 20;

export async function listFleetRuns(
  client: Client,
  tenant: { externalRef: string; status: string; plan: PlanRef | null },
  runs: ReadonlyArray<{ workflowId: string; partOf: string | null }>,
): Promise<FleetRunView[]> {
  const own = new Set(runs.map((run) => run.workflowId));
  const started = new Map<string, string[]>();
  for (const run of runs)
    if (run.partOf && !own.has(run.partOf))
      started.set(run.partOf, [...(started.get(run.partOf) ?? []), run.workflowId]);
  const [parents, coming] = await Promise.all([
    Promise.all(
      [...started].map(async ([workflowId, children]) => {
        return fleetRunView(client, workflowId, `started ${children.join(', ')}`);
      }),
    ),
    rolloutsToCome(client, tenant, started),
  ]);
  return [...parents.filter((run): run is FleetRunView => run !== null), ...coming];
}

/** A fleet run as the tenant's view lists it (null: the run is gone from Temporal). */
async function fleetRunView(client: Client, workflowId: string, via: string): Promise<FleetRunView | null> {
  const run = await readRun(client, workflowId);
  return run ? { workflowId, type: run.type, status: run.status, via, waiting: run.waiting } : null;
}

/** Running rollouts of the tenant's plan onto another version, not past the tenant yet (their pages go by ref). */
async function rolloutsToCome(
  client: Client,
  tenant: { externalRef: string; status: string; plan: PlanRef | null },
  known: ReadonlyMap<string, unknown>,
): Promise<FleetRunView[]> {
  const on = tenant.plan;
  if (!on || tenant.status !== 'active') return [];
  const ids: string[] = [];
  for await (const run of client.workflow.list({
    query: `WorkflowType = 'rolloutPlan' AND ExecutionStatus = 'Running'`,
    pageSize: ROLLOUTS_READ,
  })) {
    if (!known.has(run.workflowId)) ids.push(run.workflowId);
    if (ids.length >= ROLLOUTS_READ) break;
  }
  const views = await Promise.all(
    ids.map(async (workflowId): Promise<FleetRunView | null> => {
      const handle = client.workflow.getHandle(workflowId);
      const status = await queryOrNull(handle, rolloutStatusQuery);
      if (!status || status.from !== on.name) return null;
      if (status.plan.name === on.name && status.plan.version === on.version) return null;
      if (status.after !== null && tenant.externalRef <= status.after) return null;
      return fleetRunView(
        client,
        workflowId,
        `moves the tenants of ${on.name} onto ${status.plan.name}@${status.plan.version}; not at this tenant yet`,
      );
    }),
  );
  return views.filter((view): view is FleetRunView => view !== null);
}
