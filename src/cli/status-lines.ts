import type { RotationSection } from '../client/keys/rotation-status.js';
import type { TenantPlanSection } from '../client/plans/tenant-plan.js';
import type { FleetRunView } from '../client/tenants/fleet-runs.js';
import type { LastRun } from '../client/tenants/last-runs.js';
import type { PlanRef } from '../domain/plan-ref.js';
import { formatWait } from '../client/wait-lines.js';

/**
 * The sections of `tenantctl status` as it prints them, from the view the gateway sends. Kept apart from the
 * client modules that build each section (they query Temporal): the types come from them, erased at run time, so
 * printing a status loads no Temporal, gRPC or protobuf module (test/unit/cli-lazy.test.ts).
 */

/** The rotation section: recent rotations, and the live stage and wait of an open one. */
export function formatRotationSection(section: RotationSection): string[] {
  const lines: string[] = [];
  for (const r of section.rotations) {
    lines.push(
      `rotation ${r.slot} g${r.fromGeneration}→g${r.toGeneration}: ${r.state}${r.emergency ? ' (emergency)' : ''} ` +
        `[${r.workflowId}]`,
    );
    if (r.live) {
      lines.push(`  stage: ${r.live.stage}${r.live.heldReason ? ` (held: ${r.live.heldReason})` : ''}`);
      if (r.live.quietCheck) lines.push(`  quiet check: ${r.live.quietCheck.verdict}`);
      for (const k of r.live.activeKeys ?? [])
        lines.push(
          `  active key ${k.id}: last used ` +
            (k.lastUseKnown ? (k.lastUsedAt ?? 'never') : 'not shown') +
            (k.isCurrentKeyOfSlot ? ' (being rotated)' : k.looksUnused ? ' (looks unused)' : ''),
        );
      for (const note of r.live.notes) lines.push(`  note: ${note}`);
      if (r.live.waitingFor && !r.waiting) lines.push(`  waiting: ${r.live.waitingFor}`);
    }
    if (r.waiting) lines.push(`  ${formatWait(r.waiting)}`);
  }
  return lines;
}

/** A last run as `tenantctl status` prints it: status and times, why it failed, what it waits for. */
export function formatLastRun(run: LastRun): string[] {
  const name = run.slot ? `${run.kind} ${run.slot}` : run.kind;
  const lines = [
    `last ${name}: ${run.status}${run.outcome ? ` (${run.outcome})` : ''} [${run.workflowId}] ` +
      `started ${run.startedAt}${run.closedAt ? `, ended ${run.closedAt}` : ''}`,
  ];
  if (run.failure) {
    lines.push(`  failed: ${run.failure.message}${run.failure.type ? ` [${run.failure.type}]` : ''}`);
    for (const cause of run.failure.causes) lines.push(`  cause: ${cause}`);
  }
  if (run.waiting) lines.push(`  ${formatWait(run.waiting)}`);
  if (run.partOf) lines.push(`  part of ${run.partOf}`);
  return lines;
}

/** The plan section as `tenantctl status` prints it. */
export function formatPlanSection(section: TenantPlanSection): string[] {
  const c = section.convergence;
  if (!c) return [];
  const label = (plan: PlanRef | null) => (plan ? `${plan.name}@${plan.version}` : 'no plan');
  const lines = [
    `plan convergence ${c.workflowId}: ${c.status}${c.stage ? ` (${c.stage})` : ''}, ` +
      `${label(c.from)} → ${c.to ? label(c.to) : '?'}, started ` +
      `${c.startedAt}${c.closedAt ? `, ended ${c.closedAt}` : ''}`,
  ];
  if (c.partOf) lines.push(`  part of ${c.partOf}`);
  if (c.failure) lines.push(`  failed: ${c.failure.message}${c.failure.type ? ` [${c.failure.type}]` : ''}`);
  if (c.hold) {
    for (const hold of c.hold.holds) lines.push(`  ${hold}`);
    for (const step of c.hold.wayOut) lines.push(`  way out: ${step}`);
  } else if (c.reason) lines.push(`  ${c.reason}`);
  return lines;
}

/** A fleet run as `tenantctl status` prints it. */
export function formatFleetRun(run: FleetRunView): string[] {
  const lines = [`fleet run ${run.workflowId} (${run.type}): ${run.status}; ${run.via}`];
  if (run.waiting) lines.push(`  ${formatWait(run.waiting)}`);
  return lines;
}
