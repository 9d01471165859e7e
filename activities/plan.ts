import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { DEFAULTS } from '../src/config/defaults.js';
import { appendAudit } from '../src/db/audit-store.js';
import { emitEvent } from '../src/db/events-store.js';
import { deleteFundingPolicy, findFundingPolicy, upsertFundingPolicy } from '../src/db/funding-store.js';
import { planBodyOf, policyFieldsOf, tenantPlanState } from '../src/db/plan-state.js';
import { withTransaction, type Queryable } from '../src/db/pool.js';
import { findTenant, listPlanTenantsPage, setTenantPlan, type TenantRow } from '../src/db/tenants-store.js';
import { FailureCode } from '../src/domain/failures.js';
import { rotationScheduleId } from '../src/domain/ids.js';
import type { PlanRef } from '../src/domain/plan-ref.js';
import {
  noChanges,
  planChanges,
  planSlotsOf,
  samePlanRef,
  samePolicy,
  type PlanChanges,
} from '../src/domain/plan-rollout.js';
import type { PlanBody, ResolvedPlan } from '../src/domain/plans.js';
import { rotateTenantKeyInputSchema, type RotateTenantKeyInput } from '../src/domain/rotation-input.js';
import { parseCallerInput } from '../src/domain/tenant-input.js';
import { fundingPolicyRefusal, planConvergenceRefusal, rotationScheduleRefusal } from '../src/domain/tenant-rules.js';
import { upsertTenantRotationSchedule } from '../src/infra/rotation-schedule.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, assertTenantRule, boundary } from './failures.js';

export interface ApplyPlanInput {
  externalRef: string;
  plan: ResolvedPlan;
}

export interface ApplyPlanResult {
  /** Rotation schedules made or brought up to date (one per slot; none when the plan has no rotation). */
  schedules: string[];
  /** The auto top-up policy was set. */
  policySet: boolean;
  /** False when the tenant was on this version already (a repeat: nothing written). */
  planChanged: boolean;
}

/** The slots a tenant on the plan has keys in: onboarding's own `default` and each of the plan's. */
export function planSlots(plan: ResolvedPlan): string[] {
  return planSlotsOf(plan.body);
}

/** Where a convergence stands before it changes anything (readPlanConvergence). */
export type PlanConvergenceRead =
  | { outcome: 'not_active'; reason: string }
  | { outcome: 'ready'; from: PlanRef | null; changes: PlanChanges; upToDate: boolean };

export interface ApplyPlanVersionInput {
  externalRef: string;
  plan: PlanRef;
  /** What the run found to change (readPlanConvergence), its keys done by then. */
  changes: PlanChanges;
  /** Who asked (audited). */
  requestedBy: string;
}

export interface ApplyPlanVersionResult {
  schedules: string[];
  schedulesRemoved: string[];
  policy: PlanChanges['policy'];
  /** The version it left (null: none) when this call moved it; undefined when it was on the version already. */
  from?: PlanRef | null;
  planChanged: boolean;
}

function notFound(externalRef: string) {
  return activityFailure(FailureCode.TENANT_NOT_FOUND, `no tenant with external ref ${externalRef} in our records`);
}

/** A stored version's body; a version that does not exist is the caller's error. */
async function versionBody(db: Queryable, ref: PlanRef): Promise<PlanBody> {
  const body = await planBodyOf(db, ref);
  if (!body) throw activityFailure(FailureCode.INVALID_INPUT, `plan: plan ${ref.name} has no version ${ref.version}`);
  return body;
}

/** The plan's rotation for one slot as a Schedule (made or brought up to date: idempotent). */
async function scheduleSlot(
  client: Client,
  taskQueue: string,
  externalRef: string,
  slot: string,
  rotation: NonNullable<PlanBody['rotation']>,
): Promise<string> {
  const rawInput: RotateTenantKeyInput = {
    externalRef,
    slot,
    ...(rotation.deployer ? { deployer: rotation.deployer } : {}),
    options: {
      ...(rotation.quietPeriod !== undefined ? { quietPeriod: rotation.quietPeriod } : {}),
      ...(rotation.overlapWindow !== undefined ? { overlapWindow: rotation.overlapWindow } : {}),
    },
  };
  parseCallerInput(rotateTenantKeyInputSchema, rawInput);
  const made = await upsertTenantRotationSchedule(
    client,
    { externalRef, slot, rawInput },
    { every: rotation.interval },
    taskQueue,
  );
  return made.scheduleId;
}

async function removeSchedule(client: Client, externalRef: string, slot: string): Promise<void> {
  await client.schedule
    .getHandle(rotationScheduleId(externalRef, slot))
    .delete()
    .catch((error: unknown) => {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    });
}

/**
 * Onboarding by plan and convergence (issue 33). The last step of an onboarding by plan, once the tenant is
 * active and its keys are issued: a rotation Schedule per slot, then in one transaction the auto top-up
 * policy, the plan version on the tenant's record and its `tenant.plan_changed` event with an audit row.
 * A convergence reads what moving a tenant onto a version changes (readPlanConvergence) and, once its keys
 * are retired and issued, writes the rest the same way (applyPlanVersion). A retry after the commit finds the
 * tenant on the version already and writes nothing again, so the event is written once.
 */
export function createPlanActivities(deps: ActivityDeps) {
  const { pool } = deps;

  /** The policy, the version, its event and audit row, in one transaction under the tenant's row lock. */
  async function recordVersion(
    externalRef: string,
    tenant: TenantRow,
    plan: PlanRef & { body: PlanBody },
    change: { policy: PlanChanges['policy']; actor: string; requestedBy: string; details: Record<string, unknown> },
  ) {
    return withTransaction(pool, async (tx) => {
      const set = await setTenantPlan(tx, externalRef, plan);
      if (!set) throw notFound(externalRef);
      const { autoTopUp } = plan.body;
      // Written only where it differs, so a retried step (or a repeat on the same version) writes nothing twice.
      const current = change.policy === 'unchanged' ? undefined : await findFundingPolicy(tx, externalRef);
      const wanted = autoTopUp
        ? {
            below: autoTopUp.below,
            to: autoTopUp.to,
            maxPerDay: autoTopUp.maxPerDay,
            maxPerMonth: autoTopUp.maxPerMonth ?? null,
          }
        : null;
      const isWanted = current !== undefined && samePolicy(policyFieldsOf(current), wanted);
      if (change.policy === 'set' && autoTopUp && !isWanted) {
        assertTenantRule(fundingPolicyRefusal, externalRef, tenant);
        const row = await upsertFundingPolicy(tx, {
          externalRef,
          belowMicroUsd: autoTopUp.below,
          toMicroUsd: autoTopUp.to,
          maxPerDayMicroUsd: autoTopUp.maxPerDay,
          maxPerMonthMicroUsd: autoTopUp.maxPerMonth ?? null,
          updatedBy: change.actor,
        });
        await appendAudit(tx, {
          ...auditOrigin(),
          action: 'funding.policy_set',
          externalRef,
          details: {
            below: row.belowMicroUsd,
            to: row.toMicroUsd,
            maxPerDay: row.maxPerDayMicroUsd,
            plan: change.actor,
          },
        });
      }
      if (change.policy === 'removed' && (await deleteFundingPolicy(tx, externalRef)))
        await appendAudit(tx, {
          ...auditOrigin(),
          action: 'funding.policy_cleared',
          externalRef,
          details: { plan: change.actor },
        });
      if (!set.changed) return set;
      const to = { name: plan.name, version: plan.version };
      await emitEvent(tx, { type: 'tenant.plan_changed', externalRef, data: { externalRef, from: set.from, to } });
      await appendAudit(tx, {
        ...auditOrigin(),
        action: 'tenant.plan_changed',
        externalRef,
        details: { from: set.from, to, requestedBy: change.requestedBy, ...change.details },
      });
      return set;
    });
  }

  return {
    applyOnboardingPlan: boundary(async (input: ApplyPlanInput): Promise<ApplyPlanResult> => {
      const { externalRef, plan } = input;
      const tenant = await findTenant(pool, externalRef);
      if (!tenant) throw notFound(externalRef);
      const schedules: string[] = [];
      const { rotation } = plan.body;
      if (rotation) {
        assertTenantRule(rotationScheduleRefusal, externalRef, tenant);
        const { client, info } = Context.current();
        for (const slot of planSlots(plan))
          schedules.push(await scheduleSlot(client, info.taskQueue, externalRef, slot, rotation));
      }
      const actor = `plan:${plan.name}@${plan.version}`;
      const policy = plan.body.autoTopUp ? 'set' : 'unchanged';
      const set = await recordVersion(externalRef, tenant, plan, {
        policy,
        actor,
        requestedBy: actor,
        details: { schedules },
      });
      return { schedules, policySet: plan.body.autoTopUp !== undefined, planChanged: set.changed };
    }),

    /** What moving the tenant onto `plan` changes, from our records; nothing is written. */
    readPlanConvergence: boundary(
      async (input: { externalRef: string; plan: PlanRef }): Promise<PlanConvergenceRead> => {
        const tenant = await findTenant(pool, input.externalRef);
        if (!tenant) throw notFound(input.externalRef);
        const refused = planConvergenceRefusal(tenant);
        if (refused) return { outcome: 'not_active', reason: refused.message };
        const [state, toBody] = await Promise.all([tenantPlanState(pool, tenant), versionBody(pool, input.plan)]);
        const changes = planChanges(state, input.plan, toBody);
        return {
          outcome: 'ready',
          from: state.from,
          changes,
          upToDate: samePlanRef(state.from, input.plan) && noChanges(changes),
        };
      },
    ),

    /**
     * The rest of a convergence once its keys are done: rotation Schedules made or deleted as `changes` says,
     * then the policy, the version and its event (recordVersion).
     */
    applyPlanVersion: boundary(async (input: ApplyPlanVersionInput): Promise<ApplyPlanVersionResult> => {
      const { externalRef, changes } = input;
      const tenant = await findTenant(pool, externalRef);
      if (!tenant) throw notFound(externalRef);
      const body = await versionBody(pool, input.plan);
      const { client, info } = Context.current();
      const schedules: string[] = [];
      if (body.rotation && changes.schedulesSet.length > 0) {
        assertTenantRule(rotationScheduleRefusal, externalRef, tenant);
        for (const slot of changes.schedulesSet)
          schedules.push(await scheduleSlot(client, info.taskQueue, externalRef, slot, body.rotation));
      }
      for (const slot of changes.schedulesRemoved) await removeSchedule(client, externalRef, slot);
      const set = await recordVersion(
        externalRef,
        tenant,
        { ...input.plan, body },
        {
          policy: changes.policy,
          actor: `plan:${input.plan.name}@${input.plan.version}`,
          requestedBy: input.requestedBy,
          details: { changes },
        },
      );
      return {
        schedules,
        schedulesRemoved: changes.schedulesRemoved,
        policy: set.changed ? changes.policy : 'unchanged',
        ...(set.changed ? { from: set.from } : {}),
        planChanged: set.changed,
      };
    }),

    /**
     * A page of a rollout: active tenants on `from` not yet on the version, and the platform's request budget
     * (PLATFORM_RATE_LIMIT_PER_SECOND) the rollout paces itself by.
     */
    listPlanRolloutPage: boundary(
      async (page: {
        from: string;
        to: PlanRef;
        after: string | null;
        limit: number;
      }): Promise<{ refs: string[]; requestsPerSecond: number }> => ({
        refs: await listPlanTenantsPage(pool, page),
        requestsPerSecond: deps.platformRequestsPerSecond ?? DEFAULTS.PLATFORM_RATE_LIMIT_PER_SECOND,
      }),
    ),
  };
}
