/**
 * rotateFleet — why: rotating every tenant must not hit the platform with 10,000 rotations at once.
 *
 *   page of active tenants ─► child rotateTenantKey per tenant (at most `concurrency` at once;
 *   the platform task queue's rate limit paces their calls) ─► next page by continue-as-new
 *
 * A child that is held for an operator (or at its key limit) tells the fleet, which stops counting
 * it against the concurrency bound; the child keeps waiting on its own (parent close: abandon).
 * A slot already rotating elsewhere is skipped, never doubled (the child id is the business key).
 * With `adopt`, the page is the active tenants with unmanaged keys in the slot and each child is an
 * adoptTenantKeys (same id, same bound); the schedule is `rotation-fleet:<slot>:adopt`.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  condition,
  continueAsNew,
  defineQuery,
  ParentClosePolicy,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateFleetInput } from '../../src/domain/rotation-input.js';
import { validateWorkflowInput } from '../validate-input.js';
import { rotateTenantKey } from './rotate-tenant-key.js';
import { adoptTenantKeys } from './adopt-tenant-keys.js';
import { rotationSettledSignal } from './rotate-tenant-key-messages.js';
import { fleetDatabaseStep } from '../activity-policies.js';

export interface FleetTotals {
  started: number;
  completed: number;
  held: number;
  skipped: number;
  failed: number;
}
export interface FleetStatus {
  slot: string;
  after: string | null;
  running: number;
  totals: FleetTotals;
}

export const fleetStatusQuery = defineQuery<FleetStatus>('fleetStatus');

const db = proxyLocalActivities<Activities>(fleetDatabaseStep);

export async function rotateFleet(rawInput: RotateFleetInput): Promise<FleetTotals> {
  const input = await validateWorkflowInput('rotateFleet', rawInput, () => null);
  const totals: FleetTotals = input.totals ?? { started: 0, completed: 0, held: 0, skipped: 0, failed: 0 };
  const running = new Set<string>();
  const heldEarly = new Set<string>();
  const status = (): FleetStatus => ({ slot: input.slot, after: input.after, running: running.size, totals });
  setHandler(fleetStatusQuery, status);
  setHandler(rotationSettledSignal, ({ workflowId, outcome }) => {
    if (outcome === 'held' || outcome === 'key_limit') heldEarly.add(workflowId);
  });

  /**
   * One tenant's child: rotateTenantKey, or with `adopt` adoptTenantKeys (same id, same bound, same rate
   * limit). A slot already rotating (either kind) is skipped, never doubled; an adoption that ends with keys
   * kept counts as held.
   */
  async function rotateOne(externalRef: string): Promise<void> {
    const workflowId = rotationWorkflowId(externalRef, input.slot);
    const args = {
      externalRef,
      slot: input.slot,
      ...(input.deployer ? { deployer: input.deployer } : {}),
      ...(input.options ? { options: input.options } : {}),
      reason: input.adopt ? 'fleet adoption' : 'fleet rotation',
    };
    let result: Promise<{ outcome: string }>;
    try {
      const child = input.adopt
        ? await startChild(adoptTenantKeys, { workflowId, args: [args], parentClosePolicy: ParentClosePolicy.ABANDON })
        : await startChild(rotateTenantKey, { workflowId, args: [args], parentClosePolicy: ParentClosePolicy.ABANDON });
      result = child.result();
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        totals.skipped += 1;
        return;
      }
      throw error;
    }
    totals.started += 1;
    const notCompleted = input.adopt ? ('held' as const) : ('failed' as const);
    const outcome = await Promise.race([
      result.then(
        (r) => (r.outcome === 'completed' ? ('completed' as const) : notCompleted),
        () => 'failed' as const,
      ),
      condition(() => heldEarly.has(workflowId)).then(() => 'held' as const),
    ]);
    totals[outcome] += 1;
  }

  const page = input.adopt
    ? await db.listAdoptableTenantsPage({ slot: input.slot, after: input.after, limit: input.pageSize })
    : await db.listActiveTenantsPage({ after: input.after, limit: input.pageSize });
  for (const externalRef of page) {
    await condition(() => running.size < input.concurrency);
    running.add(externalRef);
    void rotateOne(externalRef)
      .catch(() => void (totals.failed += 1))
      .finally(() => running.delete(externalRef));
  }
  await condition(() => running.size === 0);
  if (page.length === input.pageSize) {
    // A new run per page keeps the history small whatever the fleet's size.
    await continueAsNew<typeof rotateFleet>({ ...rawInput, after: page[page.length - 1]!, totals });
  }
  return totals;
}
