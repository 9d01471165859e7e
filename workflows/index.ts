// Every production workflow, for the worker's bundle. Deterministic code only (see eslint.config.js).
export { onboardTenant } from './onboard-tenant.js';
export { handleRegistryEvent } from './handle-registry-event.js';
export { rotateTenantKey } from './keys/rotate-tenant-key.js';
export { rotateTenantKeyOnSchedule } from './keys/rotate-tenant-key-scheduled.js';
export { rotateFleet } from './keys/rotate-fleet.js';
export { suspendTenant, resumeTenant } from './suspend-tenant.js';
export { closeTenant } from './close-tenant.js';
export { reconcileFleet } from './reconcile-fleet.js';
export { fundTenant } from './fund-tenant.js';
export { autoTopUpSweep } from './auto-top-up-sweep.js';
export { importTenant } from './import-tenant.js';
export { adoptTenantKeys } from './keys/adopt-tenant-keys.js';
export { issueTenantKey } from './keys/issue-tenant-key.js';
export { revokeTenantKeySlot } from './keys/revoke-tenant-key.js';
export { rotateParentKey } from './keys/rotate-parent-key.js';
export { rotateParentKeyOnSchedule } from './keys/rotate-parent-key-scheduled.js';
export { dispatchEvents } from './dispatch-events.js';
export { deliverEventStream } from './deliver-event-stream.js';
