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
 * (src/db/request-pacer.ts): that, not the rollout, keeps the platform within its rate limit.
 *
 * pauseRollout stops it starting tenants (those running finish) and it waits, visibly, until resumeRollout.
 * A tenant whose convergence is held (a retired slot's key in use) is counted and named; the rest go on. A
 * tenant already converging elsewhere (`plan:<ref>` running) is skipped, never doubled.
 *
 * The run's state is one `Rollout` object (as closeTenant's `Close`): its handlers are one line each calling a
 * method, each step a method, the flow `run()`.
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
import type { ParsedWorkflowInput } from '../activities/input-validation.js';
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
  return new Rollout(rawInput, input).run();
}

type PauseDecision = 'pauseRollout' | 'resumeRollout';

/** One page of a rollout: its totals, the tenants it runs, its pause, and each step as a method. */
class Rollout {
  private readonly status: RolloutStatus;
  private readonly plan: RolloutStatus['plan'];
  private readonly label: string;
  private readonly running = new Set<string>();
  private readonly waits: Waits;
  private readonly decisionsNow: () => PauseDecision[];

  constructor(
    private readonly rawInput: RolloutPlanInput,
    private readonly input: ParsedWorkflowInput<'rolloutPlan'>,
  ) {
    const carried = input.continued as Carried | undefined;
    this.plan = { name: input.plan, version: input.version };
    this.label = `${this.plan.name}@${this.plan.version}`;
    this.status = {
      plan: this.plan,
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
    this.waits = new Waits({ details: () => this.summary() });
    this.decisionsNow = installDecisions({
      table: { pauseRollout: ['running'], resumeRollout: ['paused'] } as const,
      updates: { pauseRollout: pauseRolloutUpdate, resumeRollout: resumeRolloutUpdate },
      stage: () => this.status.stage,
      notAt: (name) => this.notAt(name),
      take: (name, by) => this.take(name, by),
    });
    setHandler(rolloutStatusQuery, () => ({ ...this.status, running: this.running.size }));
    this.showPause();
  }

  /** The flow: one page of tenants started and ended, then the next page by continue-as-new. */
  async run(): Promise<RolloutResult> {
    const { status, input, running } = this;
    const page = await db.listPlanRolloutPage({
      from: status.from,
      to: this.plan,
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
      if (!(await this.needsConverging(externalRef))) continue;
      running.add(externalRef);
      void this.convergeOne(externalRef).finally(() => {
        running.delete(externalRef);
        this.waits.refresh();
      });
    }
    await condition(() => running.size === 0);
    if (page.refs.length === input.pageSize) return this.nextPage(page.refs[page.refs.length - 1]!);
    return this.finish();
  }

  /** Whether the tenant has a convergence to start; counts it otherwise. */
  private async needsConverging(externalRef: string): Promise<boolean> {
    const { totals } = this.status;
    let read;
    try {
      read = await db.readPlanConvergence({ externalRef, plan: this.plan });
    } catch (error) {
      totals.failed += 1;
      sample(this.status.failed, externalRef, failureOf(error));
      return false;
    }
    // Nothing to start: not active (a suspended or closing tenant is not moved), or on the version already.
    if (read.outcome === 'not_active') {
      totals.skipped += 1;
      return false;
    }
    if (read.upToDate) {
      totals.unchanged += 1;
      return false;
    }
    return true;
  }

  /** One tenant's convergence as a child, counted by its outcome. */
  private async convergeOne(externalRef: string): Promise<void> {
    const { status, input, plan } = this;
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
            reason: input.reason ?? `rollout of plan ${this.label}`,
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

  /** A new run per page keeps the history small whatever the fleet's size; a pause is carried. */
  private async nextPage(after: string): Promise<RolloutResult> {
    await handlersFinished();
    const { totals, held, failed, paused } = this.status;
    const next: Carried = { totals, held, failed, paused };
    return await continueAsNew<typeof rolloutPlan>({
      ...this.rawInput,
      after,
      continued: next as unknown as Record<string, unknown>,
    });
  }

  /** The last page is done: every tenant was started and has ended (a pause now has nothing left to stop). */
  private async finish(): Promise<RolloutResult> {
    await handlersFinished();
    this.status.stage = 'finished';
    this.status.paused = null;
    this.waits.leave();
    const { running: _running, paused: _paused, stage: _stage, ...rest } = this.status;
    return { ...rest, stage: 'finished' };
  }

  private notAt(name: PauseDecision): string {
    return name === 'pauseRollout'
      ? `the rollout is ${this.status.stage}, not running`
      : `the rollout is ${this.status.stage}, not paused`;
  }

  private take(name: PauseDecision, by: DecisionBy): string {
    const { status } = this;
    if (name === 'pauseRollout') {
      status.stage = 'paused';
      status.paused = { by: by.operator, reason: by.reason, since: new Date().toISOString() };
      this.showPause();
      return `no tenant is started until it is resumed; ${this.running.size} running finish`;
    }
    status.stage = 'running';
    status.paused = null;
    this.showPause();
    return 'tenants are started again from where it paused';
  }

  private showPause(): void {
    const { paused } = this.status;
    if (paused)
      this.waits.enter(
        'paused',
        `resumeRollout (tenantctl plans resume ${this.label}); paused by ${paused.by}: ${paused.reason}`,
        this.decisionsNow(),
      );
    else this.waits.leave();
  }

  private summary(): string[] {
    const { totals } = this.status;
    return [
      `rollout of plan ${this.label} to the tenants of ${this.status.from}: ${totals.started} started, ` +
        `${totals.converged} converged, ${totals.unchanged} unchanged, ${totals.held} held, ` +
        `${totals.skipped} skipped, ${totals.failed} failed; ${this.running.size} running`,
    ];
  }
}
