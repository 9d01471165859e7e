import type { PlanRef } from '../domain/plan-ref.js';
import type { PolicyFields, TenantPlanState } from '../domain/plan-rollout.js';
import { planBodySchema, type PlanBody } from '../domain/plans.js';
import { parseInput } from '../domain/tenant-input.js';
import { findFundingPolicy, type FundingPolicyRow } from './funding-store.js';
import { findPlanVersion, findTenantPlanRef } from './plans-store.js';
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

/** The resume floor of the tenant's plan version (undefined: on no plan, or its plan declares none). */
export async function planResumeFloorOf(db: Queryable, tenant: TenantRow): Promise<string | undefined> {
  if (tenant.planName === null || tenant.planVersion === null) return undefined;
  return (await planBodyOf(db, { name: tenant.planName, version: tenant.planVersion }))?.resumeBalanceFloorMicroUsd;
}

/**
 * The resume floor for a tenant: its plan version's `resumeBalanceFloorMicroUsd` where it declares one, else the
 * server's RESUME_BALANCE_FLOOR_MICRO_USD (absent: 0, no check). `floorFrom` says which, as a refusal names it.
 */
export async function resumeFloorFor(
  db: Queryable,
  tenant: TenantRow,
  serverFloorMicroUsd: string | undefined,
): Promise<{ floorMicroUsd: string; floorFrom: string }> {
  const planned = await planResumeFloorOf(db, tenant);
  return planned !== undefined
    ? {
        floorMicroUsd: planned,
        floorFrom: `the resumeBalanceFloorMicroUsd of plan ${tenant.planName}@${tenant.planVersion}`,
      }
    : { floorMicroUsd: serverFloorMicroUsd ?? '0', floorFrom: 'RESUME_BALANCE_FLOOR_MICRO_USD' };
}

/**
 * The close delay for a tenant: its plan version's `closeDelay` where it declares one and it is longer than the
 * server's CLOSE_DELAY (a plan never shortens the server's minimum), else the server's. `from` says which.
 */
export async function closeDelayFor(
  db: Queryable,
  externalRef: string,
  serverDelay: string,
  delayMs: (value: string) => number,
): Promise<{ delay: string; from: string }> {
  const server = { delay: serverDelay, from: 'CLOSE_DELAY, the server' };
  const ref = await findTenantPlanRef(db, externalRef);
  if (!ref) return server;
  const planned = (await planBodyOf(db, ref))?.closeDelay;
  if (planned === undefined || delayMs(planned) <= delayMs(serverDelay)) return server;
  return { delay: planned, from: `the closeDelay of plan ${ref.name}@${ref.version}, the tenant` };
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
    policy: policy ? policyFieldsOf(policy) : null,
  };
}

/** A stored auto top-up policy in the fields a plan compares. */
export function policyFieldsOf(policy: FundingPolicyRow): PolicyFields {
  return {
    below: policy.belowMicroUsd,
    to: policy.toMicroUsd,
    maxPerDay: policy.maxPerDayMicroUsd,
    maxPerMonth: policy.maxPerMonthMicroUsd,
  };
}
