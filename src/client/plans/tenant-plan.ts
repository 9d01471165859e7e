import type { Client } from '@temporalio/client';
import { keyIssueWorkflowId, keyRevokeWorkflowId, planConvergenceWorkflowId } from '../../domain/ids.js';
import { planHoldWords, type HeldSlot } from '../../domain/plan-hold.js';
import type { PlanRef } from '../../domain/plan-ref.js';
import type { TenantStatus } from '../../domain/tenant-rules.js';
import type { RevokeTenantKeySlotResult } from '../../../workflows/keys/revoke-tenant-key.js';
import { convergeStatusQuery, type ConvergeTenantPlanResult } from '../../../workflows/plan-rollout-messages.js';
import { queryOrNull } from '../query-run.js';
import { readRun, type RunFailure } from '../run-status.js';

/**
 * The plan part of the tenant view (issue 47): the version our records put it on and its latest convergence
 * (`plan:<ref>`: from and to which version, its stage or outcome, the fleet run it is part of). A convergence
 * that ended held while the tenant is still not on its version is a hold: what holds it slot by slot (the
 * retired slot's key and its last use, as its revoke run saw them last), and the way out, in the words of
 * src/domain/plan-hold.ts that the run's own Web UI details use.
 */
export interface PlanConvergenceView {
  workflowId: string;
  /** Temporal's execution status. */
  status: string;
  from: PlanRef | null;
  /** The version it moves (or moved) the tenant onto; null when the run could not say (no worker, failed). */
  to: PlanRef | null;
  /** Running: its stage (retiring_slots, issuing_keys, funding, applying, …); ended: its outcome. */
  stage: string | null;
  outcome: ConvergeTenantPlanResult['outcome'] | null;
  /** Why it was held or skipped (the run's own words). */
  reason: string | null;
  startedAt: string;
  closedAt: string | null;
  /** The fleet run that started it (`plan-rollout:<name>@<version>`); null for an assignment. */
  partOf: string | null;
  failure: RunFailure | null;
  hold: PlanHold | null;
}

export interface PlanHold {
  slots: HeldSlot[];
  /** What holds it, one line each. */
  holds: string[];
  /** What ends the hold, in order. */
  wayOut: string[];
}

export interface TenantPlanSection {
  /** The version the tenant is on (our records); null: on no plan. */
  on: PlanRef | null;
  /** Its latest convergence; null when none ran (or it is gone from Temporal). */
  convergence: PlanConvergenceView | null;
}

/** A run as the plan section reads it: what the tenant view has read already, or read now. */
export interface SeenRun {
  workflowId: string;
  status: string;
  startedAt: string;
  closedAt: string | null;
  result: unknown;
  failure: RunFailure | null;
  partOf: string | null;
}

export type RunReader = (workflowId: string) => Promise<SeenRun | null>;

/**
 * Reads each run once: from `known` (the tenant view's last runs) when it is there, none for an id in `absent` (read
 * by the same view and found to have no run), else from Temporal.
 */
export function runReader(client: Client, known: readonly SeenRun[] = [], absent: readonly string[] = []): RunReader {
  const seen = new Map<string, Promise<SeenRun | null>>([
    ...absent.map((workflowId): [string, Promise<null>] => [workflowId, Promise.resolve(null)]),
    ...known.map((run): [string, Promise<SeenRun>] => [run.workflowId, Promise.resolve(run)]),
  ]);
  return (workflowId) => {
    let run = seen.get(workflowId);
    if (!run) {
      run = readRun(client, workflowId).then((r) => r && { ...r, partOf: r.parent });
      seen.set(workflowId, run);
    }
    return run;
  };
}

const samePlan = (a: PlanRef | null, b: PlanRef | null) =>
  a !== null && b !== null && a.name === b.name && a.version === b.version;

export async function tenantPlanSection(
  client: Client,
  tenant: { externalRef: string; status: TenantStatus; plan: PlanRef | null },
  read: RunReader,
): Promise<TenantPlanSection> {
  const workflowId = planConvergenceWorkflowId(tenant.externalRef);
  const run = await read(workflowId);
  if (!run) return { on: tenant.plan, convergence: null };
  const result = run.status === 'COMPLETED' ? (run.result as ConvergeTenantPlanResult | null) : null;
  const live =
    run.status === 'RUNNING' ? await queryOrNull(client.workflow.getHandle(workflowId), convergeStatusQuery) : null;
  const convergence: PlanConvergenceView = {
    workflowId,
    status: run.status,
    from: result?.from ?? live?.from ?? null,
    to: result?.to ?? live?.plan ?? null,
    stage: result?.outcome ?? live?.stage ?? null,
    outcome: result?.outcome ?? null,
    reason: result?.reason ?? null,
    startedAt: run.startedAt,
    closedAt: run.closedAt,
    partOf: run.partOf,
    failure: run.failure,
    hold: null,
  };
  // Held, and still so: not on the version since, and not closing or closed (nothing moves such a tenant).
  if (
    result?.outcome === 'held' &&
    !samePlan(tenant.plan, result.to) &&
    (tenant.status === 'active' || tenant.status === 'suspended')
  ) {
    const slots = await heldSlotsOf(tenant.externalRef, result, read);
    const words = planHoldWords({
      externalRef: tenant.externalRef,
      from: result.from,
      to: result.to,
      rollout: run.partOf?.startsWith('plan-rollout:') ? run.partOf : null,
      slots,
    });
    convergence.hold = { slots, ...words };
  }
  return { on: tenant.plan, convergence };
}

/**
 * What holds the tenant now, slot by slot: each retired slot the convergence did not revoke, as its latest revoke
 * run says (refused: the key and its last use; running; revoked since); else each slot the version adds whose
 * issue another run held.
 */
async function heldSlotsOf(externalRef: string, result: ConvergeTenantPlanResult, read: RunReader) {
  const changes = result.changes;
  if (!changes) return [];
  const retired = new Set(result.retired.map((r) => r.slot));
  const notRetired = changes.slotsRetired.filter((slot) => !retired.has(slot));
  if (notRetired.length > 0) {
    const slots = await Promise.all(
      notRetired.map(async (slot): Promise<HeldSlot> => {
        const workflowId = keyRevokeWorkflowId(externalRef, slot);
        const revoke = await read(workflowId);
        const answer = revoke?.status === 'COMPLETED' ? (revoke.result as RevokeTenantKeySlotResult | null) : null;
        const state =
          revoke?.status === 'RUNNING'
            ? 'revoke_running'
            : answer?.outcome === 'revoked'
              ? 'revoked'
              : 'revoke_refused';
        return {
          slot,
          state,
          workflowId,
          keyId: answer?.keyId ?? null,
          lastUsedAt: answer?.lastUsedAt ?? null,
          verdict: answer?.outcome === 'refused' ? answer.verdict : (revoke?.failure?.message ?? null),
        };
      }),
    );
    return slots;
  }
  const issued = new Set(result.keys.map((k) => k.slot));
  const busy = changes.slotsAdded.filter((slot) => !issued.has(slot));
  const slots = await Promise.all(
    busy.map(async (slot): Promise<HeldSlot | null> => {
      const workflowId = keyIssueWorkflowId(externalRef, slot);
      const issue = await read(workflowId);
      return issue?.status === 'RUNNING'
        ? { slot, state: 'issue_running', workflowId, keyId: null, lastUsedAt: null, verdict: null }
        : null;
    }),
  );
  return slots.filter((slot): slot is HeldSlot => slot !== null);
}
