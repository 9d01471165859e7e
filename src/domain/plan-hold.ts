import type { PlanRef } from './plan-ref.js';

/**
 * A tenant held off a plan version (issue 47), in words: what holds it, slot by slot, and what ends the hold.
 * One function for every surface (the convergence's Web UI current details, `tenantctl status`,
 * `GET /v1/tenants/:ref`, `tenantctl list --attention`), so they say the same. No zod, no I/O: the workflow
 * imports it.
 */

/** One slot that holds the tenant, and where it stands. */
export interface HeldSlot {
  slot: string;
  /**
   * revoke_refused: the retired slot's key was not revoked (in use, or its last use unknown); revoke_running:
   * a revoke of the slot is running; revoked: revoked since (the slot is free); issue_running: another issue of
   * a slot the version adds is running.
   */
  state: 'revoke_refused' | 'revoke_running' | 'revoked' | 'issue_running';
  /** The slot's run: `key-revoke:<ref>:<slot>` or `key:<ref>:<slot>`. */
  workflowId: string;
  keyId: string | null;
  /** The key's last use as the quiet gate last saw it (null: none seen, or not known). */
  lastUsedAt: string | null;
  /** The quiet gate's verdict (a refused revoke), else null. */
  verdict: string | null;
}

export interface PlanHoldInput {
  externalRef: string;
  /** The version it stays on (null: none). */
  from: PlanRef | null;
  /** The version it was held off. */
  to: PlanRef;
  /** The rollout whose convergence this was (`plan-rollout:<name>@<version>`), null for an assignment. */
  rollout: string | null;
  slots: HeldSlot[];
}

export interface PlanHoldWords {
  /** One line per slot: what holds the tenant. */
  holds: string[];
  /** What ends the hold, in order: the commands to run (or the runs to wait for). */
  wayOut: string[];
}

const label = (plan: PlanRef | null) => (plan ? `${plan.name}@${plan.version}` : 'no plan');

function holdOf(slot: HeldSlot): string {
  const key = slot.keyId ? `key ${slot.keyId}` : 'its key';
  const used = slot.lastUsedAt ? `last used at ${slot.lastUsedAt}` : 'no last use seen';
  switch (slot.state) {
    case 'revoke_refused':
      return (
        `slot ${slot.slot}: ${key} is still active, ${used}; its revoke was refused ` +
        `(${slot.verdict ?? 'the quiet gate'})`
      );
    case 'revoke_running':
      return `slot ${slot.slot}: a revoke of ${key} is running (${slot.workflowId})`;
    case 'revoked':
      return `slot ${slot.slot}: ${key} has been revoked since; the slot is free`;
    case 'issue_running':
      return `slot ${slot.slot}: another key issue of the slot is running (${slot.workflowId})`;
  }
}

function wayOutOf(ref: string, slot: HeldSlot): string | null {
  const key = slot.keyId ? `key ${slot.keyId}` : 'the key';
  switch (slot.state) {
    case 'revoke_refused':
      return (
        `move whatever uses ${key} to another slot's key, then revoke it through the quiet gate: ` +
        `tenantctl key revoke ${ref} --slot ${slot.slot} (or, when you know it is not in use: ` +
        `tenantctl key revoke ${ref} --slot ${slot.slot} --force --reason "<why>")`
      );
    case 'revoke_running':
    case 'issue_running':
      return `wait for ${slot.workflowId} to end (its wait is shown with the tenant's runs)`;
    case 'revoked':
      return null;
  }
}

export function planHoldWords(hold: PlanHoldInput): PlanHoldWords {
  const { externalRef: ref, to } = hold;
  const wayOut = hold.slots.flatMap((slot) => wayOutOf(ref, slot) ?? []);
  const fromPlan = hold.from && hold.from.name !== to.name ? ` --from ${hold.from.name}` : '';
  wayOut.push(
    `then move it onto ${label(to)}: tenantctl plans assign ${ref} ${label(to)}` +
      (hold.rollout
        ? ` (or, once ${hold.rollout} has ended, run it again: ` +
          `tenantctl plans rollout ${to.name} --version ${to.version}${fromPlan})`
        : ''),
  );
  return {
    holds: [`held on ${label(hold.from)}, not moved onto ${label(to)}`, ...hold.slots.map(holdOf)],
    wayOut,
  };
}
