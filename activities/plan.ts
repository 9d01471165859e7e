import { Context } from '@temporalio/activity';
import { appendAudit } from '../src/db/audit-store.js';
import { emitEvent } from '../src/db/events-store.js';
import { upsertFundingPolicy } from '../src/db/funding-store.js';
import type { ResolvedPlan } from '../src/domain/plans.js';
import { withTransaction } from '../src/db/pool.js';
import { findTenant, setTenantPlan } from '../src/db/tenants-store.js';
import { FailureCode } from '../src/domain/failures.js';
import { DEFAULT_SLOT } from '../src/domain/onboarding.js';
import { rotateTenantKeyInputSchema, type RotateTenantKeyInput } from '../src/domain/rotation-input.js';
import { parseCallerInput } from '../src/domain/tenant-input.js';
import { fundingPolicyRefusal, rotationScheduleRefusal } from '../src/domain/tenant-rules.js';
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
  return [...new Set([DEFAULT_SLOT, ...plan.body.keySlots])];
}

/**
 * The last step of an onboarding by plan, once the tenant is active and its keys are issued: a rotation
 * Schedule per slot (made or updated: idempotent), then in one transaction the auto top-up policy, the
 * plan version on the tenant's record and its `tenant.plan_changed` event with an audit row. A retry after
 * the commit finds the tenant on the version already and writes nothing again, so the event is written once.
 */
export function createPlanActivities(deps: ActivityDeps) {
  const { pool } = deps;
  return {
    applyOnboardingPlan: boundary(async (input: ApplyPlanInput): Promise<ApplyPlanResult> => {
      const { externalRef, plan } = input;
      const tenant = await findTenant(pool, externalRef);
      if (!tenant)
        throw activityFailure(
          FailureCode.TENANT_NOT_FOUND,
          `no tenant with external ref ${externalRef} in our records`,
        );
      const schedules: string[] = [];
      const { rotation } = plan.body;
      if (rotation) {
        assertTenantRule(rotationScheduleRefusal, externalRef, tenant);
        const { client, info } = Context.current();
        for (const slot of planSlots(plan)) {
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
            info.taskQueue,
          );
          schedules.push(made.scheduleId);
        }
      }
      const actor = `plan:${plan.name}@${plan.version}`;
      return withTransaction(pool, async (tx) => {
        const set = await setTenantPlan(tx, externalRef, plan);
        if (!set)
          throw activityFailure(
            FailureCode.TENANT_NOT_FOUND,
            `no tenant with external ref ${externalRef} in our records`,
          );
        if (!set.changed) return { schedules, policySet: plan.body.autoTopUp !== undefined, planChanged: false };
        const { autoTopUp } = plan.body;
        if (autoTopUp) {
          assertTenantRule(fundingPolicyRefusal, externalRef, tenant);
          const row = await upsertFundingPolicy(tx, {
            externalRef,
            belowMicroUsd: autoTopUp.below,
            toMicroUsd: autoTopUp.to,
            maxPerDayMicroUsd: autoTopUp.maxPerDay,
            maxPerMonthMicroUsd: autoTopUp.maxPerMonth ?? null,
            updatedBy: actor,
          });
          await appendAudit(tx, {
            ...auditOrigin(),
            action: 'funding.policy_set',
            externalRef,
            details: { below: row.belowMicroUsd, to: row.toMicroUsd, maxPerDay: row.maxPerDayMicroUsd, plan: actor },
          });
        }
        const to = { name: plan.name, version: plan.version };
        await emitEvent(tx, { type: 'tenant.plan_changed', externalRef, data: { externalRef, from: set.from, to } });
        await appendAudit(tx, {
          ...auditOrigin(),
          action: 'tenant.plan_changed',
          externalRef,
          details: { from: set.from, to, schedules },
        });
        return { schedules, policySet: autoTopUp !== undefined, planChanged: true };
      });
    }),
  };
}
