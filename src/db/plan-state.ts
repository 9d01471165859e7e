import type { PlanRef } from '../domain/plan-ref.js';
import type { TenantPlanState } from '../domain/plan-rollout.js';
import { planBodySchema, type PlanBody } from '../domain/plans.js';
import { parseInput } from '../domain/tenant-input.js';
import { findFundingPolicy } from './funding-store.js';
import { findPlanVersion } from './plans-store.js';
import type { Queryable } from './pool.js';
import { listKeyRecords } from './tenant-keys-store.js';
import type { TenantRow } from './tenants-store.js';

/**
 * What our records say of a tenant against its plan (issue 33), read the same way by a convergence run, the
 * rollout's dry run and the drift check: the version it is on with its body, the slots holding a key and its
 * auto top-up policy.
 */

/** A stored version's body, as the schema parses it; undefined when there is no such version. */
export async function planBodyOf(db: Queryable, ref: PlanRef): Promise<PlanBody | undefined> {
  const row = await findPlanVersion(db, ref.name, ref.version);
  return row ? parseInput(planBodySchema, row.body) : undefined;
}

/** Slots whose key the platform holds as active (one we issued, or an imported one we never saw). */
const HOLDING = new Set(['active', 'unmanaged']);

export async function tenantPlanState(db: Queryable, tenant: TenantRow): Promise<TenantPlanState> {
  const from =
    tenant.planName !== null && tenant.planVersion !== null
      ? { name: tenant.planName, version: tenant.planVersion }
      : null;
  const [fromBody, keys, policy] = await Promise.all([
    from ? planBodyOf(db, from) : undefined,
    listKeyRecords(db, tenant.externalRef),
    findFundingPolicy(db, tenant.externalRef),
  ]);
  return {
    from,
    // The version a tenant is on exists (a foreign key holds it, and versions are never deleted).
    fromBody: fromBody ?? null,
    activeSlots: [...new Set(keys.filter((key) => HOLDING.has(key.status)).map((key) => key.slot))],
    policy: policy
      ? {
          below: policy.belowMicroUsd,
          to: policy.toMicroUsd,
          maxPerDay: policy.maxPerDayMicroUsd,
          maxPerMonth: policy.maxPerMonthMicroUsd,
        }
      : null,
  };
}
