/** Names of everything drift puts in Temporal. Safe to import from workflows. */
export const DRIFT_SCHEDULE_ID = 'drift-fleet';

/** On demand: one check per scope at a time (a second start joins the running one). */
export function driftCheckWorkflowId(externalRef: string | undefined): string {
  return externalRef ? `drift:tenant:${externalRef}` : 'drift:fleet';
}

/** Workflow types whose running execution makes a tenant skipped: never fixed under them. */
export const TENANT_WORKFLOW_TYPES = [
  'onboardTenant',
  'rotateTenantKey',
  'rotateTenantKeyOnSchedule',
  'closeTenant',
  'suspendTenant',
  'resumeTenant',
] as const;
