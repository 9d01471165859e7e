/**
 * Which runs wait for a person (issue 47): the one rule behind `tenantctl list --attention`,
 * `GET /v1/tenants?attention=true` and the `attention` of the tenant view. No zod, no I/O: the workflows
 * import it too (the plan convergence's outcome attribute).
 *
 * A run waits for a person when its current wait is one only a person ends: a decision (resolve a transfer,
 * revoke a held key anyway, resume a paused rollout), or work outside the run the wait names (fund the
 * parent, free a key under the platform's limit). A wait that ends by itself (a quiet gate, a close window,
 * a reconciliation) does not. And a tenant held off a plan version (its convergence ended `held`) waits for
 * a person until the hold's way out is taken, though no run of it is open.
 */

/** The wait stages only a person ends (`currentWait.stage`; docs/waits.md lists each). */
export const PERSON_WAIT_STAGES = [
  'needs_operator',
  'waiting_for_parent_funds',
  'held',
  'key_limit',
  'naming_old_key',
  'paused',
] as const;

export function waitsForPerson(wait: { stage: string } | null | undefined): boolean {
  return wait !== null && wait !== undefined && (PERSON_WAIT_STAGES as readonly string[]).includes(wait.stage);
}

/**
 * How a tenant's runs show a wait's stage in their TenantStatus search attribute, set when the wait starts
 * (workflows/waits.ts): onboarding and top-ups the stage itself, a close `close:<stage>`, a key issue
 * `key_issue:<stage>`, a slot's revoke `key_revoke:<stage>`, a rotation or adoption `rotation_<stage>`.
 */
const TENANT_STATUS_PREFIXES = ['', 'close:', 'key_issue:', 'key_revoke:', 'rotation_'] as const;

/** Every TenantStatus value of an open run that waits for a person: one visibility query finds them all. */
export const PERSON_TENANT_STATUSES: readonly string[] = TENANT_STATUS_PREFIXES.flatMap((prefix) =>
  PERSON_WAIT_STAGES.map((stage) => `${prefix}${stage}`),
);

/** A plan convergence's TenantStatus when it ends (`plan:converged`, `plan:held`, …). */
export function planOutcomeTenantStatus(outcome: string): string {
  return `plan:${outcome}`;
}

/** The TenantStatus of a convergence that ended held: the tenant waits for a person until the hold ends. */
export const PLAN_HELD_TENANT_STATUS = planOutcomeTenantStatus('held');

/** The visibility query of a tenant's open runs that wait for a person (all tenants: no ref). */
export function openPersonWaitsQuery(): string {
  return `ExecutionStatus = 'Running' AND TenantStatus IN (${PERSON_TENANT_STATUSES.map((s) => `'${s}'`).join(', ')})`;
}

/** The visibility query of plan convergences that ended held (each tenant's latest is checked by its reader). */
export function heldConvergencesQuery(): string {
  return `WorkflowType = 'convergeTenantPlan' AND TenantStatus = '${PLAN_HELD_TENANT_STATUS}'`;
}
