import type { Client } from '@temporalio/client';
// @temporalio/proto is CommonJS: Node's ESM loader exposes it as a default export only.
import proto from '@temporalio/proto';
import type { SimStateSnapshot } from '../../src/sim/index.js';
import type { OnboardingWorld } from './world.js';

/** After the run: exactly-once effects on the platform and in our records, and history sizes. */
export async function verifyOnboardings(
  world: OnboardingWorld,
  externalRefs: readonly string[],
  fundingMicroUsd: string,
): Promise<string[]> {
  const state: SimStateSnapshot = await world.sim.state();
  const violations: string[] = [];
  const subaccountsByRef = groupBy(state.subaccounts, (s) => s.externalRef);
  const transfersBySub = groupBy(state.transfers, (t) => t.subaccountId);
  const activeKeysBySub = groupBy(
    state.apiKeys.filter((k) => k.kind === 'tenant' && k.status === 'active'),
    (k) => k.subaccountId ?? '',
  );
  for (const ref of externalRefs) {
    const subs = subaccountsByRef.get(ref) ?? [];
    if (subs.length !== 1) {
      violations.push(`${ref}: ${subs.length} sub-accounts on the platform (expected 1)`);
      continue;
    }
    const sub = subs[0]!;
    const transfers = transfersBySub.get(sub.id) ?? [];
    if (transfers.length !== 1 || transfers[0]!.amountMicroUsd !== fundingMicroUsd) {
      violations.push(
        `${ref}: ${transfers.length} transfers (${transfers.map((t) => t.amountMicroUsd).join(', ')}) ` +
          `(expected 1 of ${fundingMicroUsd})`,
      );
    }
    const keys = activeKeysBySub.get(sub.id) ?? [];
    if (keys.length !== 1) violations.push(`${ref}: ${keys.length} active keys (expected 1)`);
  }
  const { rows } = await world.pool.query<{ external_ref: string; status: string }>(
    'SELECT external_ref, status FROM tenants WHERE external_ref = ANY($1::text[])',
    [externalRefs],
  );
  const statusByRef = new Map(rows.map((r) => [r.external_ref, r.status]));
  for (const ref of externalRefs) {
    const status = statusByRef.get(ref);
    if (status !== 'active')
      violations.push(`${ref}: tenant record is ${status ?? 'missing'} in Postgres (expected active)`);
  }
  return violations;
}

export interface HistoryProfile {
  workflowId: string;
  events: number;
  workflowTasks: number;
  byType: Record<string, number>;
}

/** Event counts of a few finished runs; `workflowTasks` is how many round trips the worker made. */
export async function profileHistories(client: Client, workflowIds: readonly string[]): Promise<HistoryProfile[]> {
  const eventNames = proto.temporal.api.enums.v1.EventType;
  const profiles: HistoryProfile[] = [];
  for (const workflowId of workflowIds) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const byType: Record<string, number> = {};
    for (const event of history.events ?? []) {
      const name = (eventNames[event.eventType ?? 0] ?? String(event.eventType)).replace(/^EVENT_TYPE_/, '');
      byType[name] = (byType[name] ?? 0) + 1;
    }
    profiles.push({
      workflowId,
      events: history.events?.length ?? 0,
      workflowTasks: byType.WORKFLOW_TASK_COMPLETED ?? 0,
      byType,
    });
  }
  return profiles;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
