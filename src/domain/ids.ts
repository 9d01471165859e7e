/**
 * Names of what we put in Temporal (workflow, schedule and task queue ids). Safe to import from workflows.
 */

/** An external ref's and a tenant name's longest (the schemas in tenant-input.ts; workflows read them too). */
export const EXTERNAL_REF_MAX_LENGTH = 128;
export const TENANT_NAME_MAX_LENGTH = 200;

/**
 * A run started under another id than its business key's (a Web-UI or `temporal workflow start`):
 * the refusal's text, or null when the id is the expected one. The id is what makes a start idempotent.
 */
export function workflowIdProblem(expected: string, actual: string): string | null {
  return actual === expected ? null : `the workflow id must be ${expected} (it is ${actual})`;
}

/** One onboarding per external ref: 20 concurrent starts give one run. */
export function onboardingWorkflowId(externalRef: string): string {
  return `onboard:${externalRef}`;
}

/** suspend / resume / close of one tenant: one run per action and tenant at a time. */
export function lifecycleWorkflowId(action: 'suspend' | 'resume' | 'close', externalRef: string): string {
  return `${action}:${externalRef}`;
}

/** One run per verified webhook delivery (the inbox row's id). */
export function registryDeliveryWorkflowId(deliveryId: string): string {
  return `registry-delivery:${deliveryId}`;
}

/** The workflow id is the business key: one rotation per tenant slot at a time, whoever starts it. */
export function rotationWorkflowId(externalRef: string, slot: string): string {
  return `rotate:${externalRef}:${slot}`;
}

/** Per-tenant schedule; its action is a launcher that starts `rotate:<ref>:<slot>` as a child. */
export function rotationScheduleId(externalRef: string, slot: string): string {
  return `rotation:${externalRef}:${slot}`;
}

export function fleetScheduleId(slot: string): string {
  return `rotation-fleet:${slot}`;
}

/**
 * Activities that call the platform run on their own task queue, whose workers set Temporal's
 * `maxTaskQueueActivitiesPerSecond`: the server then paces every rotation of the fleet together.
 */
export function platformTaskQueue(taskQueue: string): string {
  return `${taskQueue}-platform`;
}

export const DRIFT_SCHEDULE_ID = 'drift-fleet';

/** On demand: one check per scope at a time (a second start joins the running one). */
export function driftCheckWorkflowId(externalRef: string | undefined): string {
  return externalRef ? `drift:tenant:${externalRef}` : 'drift:fleet';
}

/** A top-up: one run per tenant and caller idempotency key (which has no `:`), whichever way it was started. */
export function topUpWorkflowId(externalRef: string, idempotencyKey: string): string {
  return `fund:${externalRef}:${idempotencyKey}`;
}

/** The auto top-up sweep's Schedule, and the workflow id of its action. */
export const AUTO_TOP_UP_SCHEDULE_ID = 'auto-top-up';
export function autoTopUpSweepWorkflowId(): string {
  return 'auto-top-up-sweep';
}

/** One import per external ref: a second apply joins (or, once done, finds nothing left to do). */
export function importWorkflowId(externalRef: string): string {
  return `import:${externalRef}`;
}

/**
 * The fleet adoption schedule of a slot (imported tenants' unmanaged keys) and its run: apart from the fleet rotation.
 */
export function fleetAdoptionScheduleId(slot: string): string {
  return `rotation-fleet:${slot}:adopt`;
}
export function fleetAdoptionWorkflowId(slot: string): string {
  return `rotate-fleet:${slot}:adopt`;
}
/** One issue of a key per tenant slot at a time: a second start joins the running one. */
export function keyIssueWorkflowId(externalRef: string, slot: string): string {
  return `key:${externalRef}:${slot}`;
}

/** One revoke of a slot's key at a time (it may wait at the quiet gate). */
export function keyRevokeWorkflowId(externalRef: string, slot: string): string {
  return `key-revoke:${externalRef}:${slot}`;
}

/** The parent's own platform key: never two rotations at once, whoever starts it (schedule or operator). */
export const PARENT_KEY_ROTATION_WORKFLOW_ID = 'rotate-parent-key';
export const PARENT_KEY_ROTATION_SCHEDULE_ID = 'parent-key-rotation';
/** The event dispatcher: one per task queue (each queue has its own database in tests and deployments). */
export function eventDispatcherWorkflowId(taskQueue: string): string {
  return `event-dispatcher:${taskQueue}`;
}

/** One delivery stream per subscription and tenant (or the parent-wide stream ''), delivered in order. */
export function eventStreamWorkflowId(subscriptionId: string, stream: string): string {
  return `event-stream:${subscriptionId}:${stream || '-'}`;
}

/** One convergence of a tenant onto a plan version at a time (a rollout's child, or an assignment). */
export function planConvergenceWorkflowId(externalRef: string): string {
  return `plan:${externalRef}`;
}

/** One rollout per plan version, whoever starts it. */
export function planRolloutWorkflowId(plan: { name: string; version: number }): string {
  return `plan-rollout:${plan.name}@${plan.version}`;
}
