import type { ActivityDeps } from './context.js';
import { createDriftActivities } from './drift/index.js';
import { createInputValidationActivities } from './input-validation.js';
import { createKeyActivities } from './keys/issue-key.js';
import { createLifecycleActivities } from './lifecycle.js';
import { createRotationActivities, verifyThenObserve } from './keys/rotation.js';
import { createRegistryActivities } from './registry.js';
import { createTenantActivities } from './tenants.js';
import { createTopUpActivities } from './top-ups.js';
import { createAutoTopUpActivities } from './auto-top-up.js';
import { createWalletActivities } from './wallet.js';
import { createCloseScheduleActivities } from './close-schedule.js';
import { preflightInsideRun } from './onboarding-preflight.js';
import { createImportActivities } from './import.js';
import { createAdoptionActivities } from './keys/adoption.js';
import { createKeySlotActivities } from './keys/slots.js';
import { createParentKeyActivities } from './keys/parent-key.js';
import { createEventActivities } from './events.js';
import { createBeginOnboardingActivity } from './onboarding-begin.js';
import { createApprovalActivities } from './approvals.js';
import { createPlanActivities } from './plan.js';
import { resolvePlan } from '../src/db/plans-store.js';
import { boundary } from './failures.js';
import { watchThenObserve } from './keys/watch-key-usage.js';

export type { ActivityDeps } from './context.js';

/** All activities, registered on the worker; workflows type them with `import type`. */
export function createActivities(deps: ActivityDeps) {
  const validation = createInputValidationActivities(
    (input) => preflightInsideRun(deps, input),
    deps.transfers?.maxMicroUsd,
    {
      closeDelay: deps.lifecycle?.closeDelay,
      tenantKeyLimit: deps.platformTenantKeyLimit,
      pool: deps.pool,
      vault: deps.vault,
    },
  );
  const tenants = createTenantActivities(deps);
  const keys = createKeyActivities(deps);
  const rotation = createRotationActivities(deps);
  return {
    ...validation,
    ...tenants,
    ...createBeginOnboardingActivity(validation, tenants, (spec) =>
      resolvePlan(deps.pool, spec, {
        maxTransferMicroUsd: deps.transfers?.maxMicroUsd,
        tenantKeyLimit: deps.platformTenantKeyLimit,
      }),
    ),
    ...createPlanActivities(deps),
    ...createWalletActivities(deps),
    ...createTopUpActivities(deps),
    ...createAutoTopUpActivities(deps),
    ...keys,
    ...createLifecycleActivities(deps),
    ...rotation,
    verifyKeyAndObserveUsage: boundary(verifyThenObserve(keys.verifyTenantKey, rotation.observeKeyUsage)),
    watchKeyUsage: boundary(watchThenObserve(rotation.observeKeyUsage)),
    ...createRegistryActivities(deps),
    ...createDriftActivities(deps),
    ...createCloseScheduleActivities(deps),
    ...createImportActivities(deps),
    ...createAdoptionActivities(deps),
    ...createKeySlotActivities(deps),
    ...createParentKeyActivities(deps),
    ...createEventActivities(deps),
    ...createApprovalActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
