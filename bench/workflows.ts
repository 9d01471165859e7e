// The benchmarks' worker bundle: the production workflows they measure (named one by one, so a
// benchmark never depends on workflows it does not run) plus the bench-only baselines.
export { onboardTenant } from '../workflows/onboard-tenant.js';
export { rotateFleet } from '../workflows/keys/rotate-fleet.js';
export { rotateTenantKey } from '../workflows/keys/rotate-tenant-key.js';
export * from './onboarding/bare-workflows.js';
export { reconcileFleet } from '../workflows/reconcile-fleet.js';
export { fundTenant } from '../workflows/fund-tenant.js';
export { autoTopUpSweep } from '../workflows/auto-top-up-sweep.js';
export { dispatchEvents } from '../workflows/dispatch-events.js';
export { deliverEventStream } from '../workflows/deliver-event-stream.js';
