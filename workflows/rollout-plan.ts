/**
 * rolloutPlan — why: a new plan version (or a move of one plan's tenants onto another) must reach every tenant
 * on it without hitting the platform with thousands of runs at once, and an operator must be able to stop it.
 *
 *   page of active tenants on `from` not yet on the version ─► per tenant: readPlanConvergence (not active:
 *   skipped; up to date: unchanged) ─► child convergeTenantPlan (at most `concurrency` at once, and no more
 *   than ROLLOUT_BUDGET_SHARE of a second's platform requests: PLATFORM_RATE_LIMIT_PER_SECOND) ─► next page by
 *   continue-as-new (totals, samples and the pause carried)
 *
 * The children's platform requests take their turns in the budget every worker and gateway shares
 * (src/infra/request-pacer.ts): that, not the rollout, keeps the platform within its rate limit.
 *
 * pauseRollout stops it starting tenants (those running finish) and it waits, visibly, until resumeRollout.
 * A tenant whose convergence is held (a retired slot's key in use) is counted and named; the rest go on. A
 * tenant already converging elsewhere (`plan:<ref>` running) is skipped, never doubled.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  condition,
  continueAsNew,
  ParentClosePolicy,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { DecisionBy } from '../src/domain/operator-decisions.js';
import { planConvergenceWorkflowId, planRolloutWorkflowId } from '../src/domain/ids.js';
import { ROLLOUT_BUDGET_SHARE } from '../src/domain/plan-ids.js';
import type { RolloutPlanInput } from '../src/domain/plan-rollout.js';
import { fleetDatabaseStep } from './activity-policies.js';
import { convergeTenantPlan } from './converge-tenant-plan.js';
import { installDecisions } from './decision-table.js';
import {
  pauseRolloutUpdate,
  resumeRolloutUpdate,
  ROLLOUT_SAMPLE,
  rolloutStatusQuery,
  type RolloutResult,
  type RolloutStatus,
  type RolloutTotals,
} from './plan-rollout-messages.js';
import { validateWorkflowInput } from './validate-input.js';
import { handlersFinished, Waits } from './waits.js';

const db = proxyLocalActivities<Activities>(fleetDatabaseStep);

/** What a rollout hands to its next run. */
interface Carried {
  totals: RolloutTotals;
  held: RolloutStatus['held'];
  failed: RolloutStatus['failed'];
  paused: RolloutStatus['paused'];
}

function failureOf(error: unknown): string {
  return ((error as Error).cause as Error | undefined)?.message ?? (error as Error).message;
}

function sample(list: Array<{ externalRef: string; reason: string }>, externalRef: string, reason: string): void {
  if (list.length < ROLLOUT_SAMPLE) list.push({ externalRef, reason });
}

export async function rolloutPlan(rawInput: RolloutPlanInput): Promise<RolloutResult> {
  const input = await validateWorkflowInput('rolloutPlan', rawInput, (i) =>
    planRolloutWorkflowId({ name: i.plan, version: i.version }),
  );
  const carried = input.continued as Carried | undefined;
  const plan = { name: input.plan, version: input.version };
  const label = `${plan.name}@${plan.version}`;
  const running = new Set<string>();
  const status: RolloutStatus = {
    plan,
    from: input.from ?? input.plan,
    stage: carried?.paused ? 'paused' : 'running',
    paused: carried?.paused ?? null,
    after: input.after,
    running: 0,
    concurrency: input.concurrency,
    totals: carried?.totals ?? { started: 0, converged: 0, unchanged: 0, held: 0, skipped: 0, failed: 0 },
    held: carried?.held ?? [],
    failed: carried?.failed ?? [],
  };
  const summary = () => [
    `rollout of plan ${label} to the tenants of ${status.from}: ${status.totals.started} started, ` +
      `${status.totals.converged} converged, ${status.totals.unchanged} unchanged, ${status.totals.held} held, ` +
      `${status.totals.skipped} skipped, ${status.totals.failed} failed; ${running.size} running`,
  ];
  const waits = new Waits({ details: summary });
  const showPause = () => {
    if (status.paused)
      waits.enter(
        'paused',
        `resumeRollout (tenantctl plans resume ${label}); paused by ${status.paused.by}: ${status.paused.reason}`,
        decisionsNow(),
      );
    else waits.leave();
  };
  const decisionsNow = installDecisions({
    table: { pauseRollout: ['running'], resumeRollout: ['paused'] } as const,
    updates: { pauseRollout: pauseRolloutUpdate, resumeRollout: resumeRolloutUpdate },
    stage: () => status.stage,
    notAt: (name) =>
      name === 'pauseRollout'
        ? `the rollout is ${status.stage}, not running`
        : `the rollout is ${status.stage}, not paused`,
    take: (name, by: DecisionBy) => {
      if (name === 'pauseRollout') {
        status.stage = 'paused';
        status.paused = { by: by.operator, reason: by.reason, since: new Date().toISOString() };
        showPause();
        return `no tenant is started until it is resumed; ${running.size} running finish`;
      }
      status.stage = 'running';
      status.paused = null;
      showPause();
      return 'tenants are started again from where it paused';
    },
  });
  setHandler(rolloutStatusQuery, () => ({ ...status, running: running.size }));
  showPause();

  async function convergeOne(externalRef: string): Promise<void> {
    let result;
    try {
      const child = await startChild(convergeTenantPlan, {
        workflowId: planConvergenceWorkflowId(externalRef),
        args: [
          {
            externalRef,
            plan: plan.name,
            version: plan.version,
            requestedBy: input.requestedBy,
            reason: input.reason ?? `rollout of plan ${label}`,
            ...(input.options ? { options: input.options } : {}),
          },
        ],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      status.totals.started += 1;
      result = await child.result();
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        status.totals.skipped += 1;
        return;
      }
      status.totals.failed += 1;
      sample(status.failed, externalRef, failureOf(error));
      return;
    }
    status.totals[result.outcome] += 1;
    if (result.outcome === 'held') sample(status.held, externalRef, result.reason ?? 'held');
  }

  const page = await db.listPlanRolloutPage({
    from: status.from,
    to: plan,
    after: input.after,
    limit: input.pageSize,
  });
  // No more tenants in flight than the share of a second's platform requests: each waits its turn in the shared
  // budget, and more in flight would only wait longer (and hold their workflow tasks open doing so).
  const perSecond = input.platformRequestsPerSecond ?? page.requestsPerSecond;
  const inFlight = Math.max(1, Math.min(input.concurrency, Math.floor(perSecond * ROLLOUT_BUDGET_SHARE)));
  status.concurrency = inFlight;
  for (const externalRef of page.refs) {
    await condition(() => status.stage === 'running' && running.size < inFlight);
    let read;
    try {
      read = await db.readPlanConvergence({ externalRef, plan });
    } catch (error) {
      status.totals.failed += 1;
      sample(status.failed, externalRef, failureOf(error));
      continue;
    }
    // Nothing to start: not active (a suspended or closing tenant is not moved), or on the version already.
    if (read.outcome === 'not_active') {
      status.totals.skipped += 1;
      continue;
    }
    if (read.upToDate) {
      status.totals.unchanged += 1;
      continue;
    }
    running.add(externalRef);
    void convergeOne(externalRef).finally(() => {
      running.delete(externalRef);
      waits.refresh();
    });
  }
  await condition(() => running.size === 0);
  if (page.refs.length === input.pageSize) {
    // A new run per page keeps the history small whatever the fleet's size; a pause is carried.
    await handlersFinished();
    const next: Carried = {
      totals: status.totals,
      held: status.held,
      failed: status.failed,
      paused: status.paused,
    };
    return await continueAsNew<typeof rolloutPlan>({
      ...rawInput,
      after: page.refs[page.refs.length - 1]!,
      continued: next as unknown as Record<string, unknown>,
    });
  }
  // The last page is done: every tenant was started and has ended (a pause now has nothing left to stop).
  await handlersFinished();
  status.stage = 'finished';
  status.paused = null;
  waits.leave();
  const { running: _running, paused: _paused, stage: _stage, ...rest } = status;
  return { ...rest, stage: 'finished' };
}
