/**
 * rotateFleet — why: rotating every tenant must not hit the platform with 10,000 rotations at once.
 *
 *   page of active tenants ─► child rotateTenantKey per tenant (at most `concurrency` at once;
 *   the platform task queue's rate limit paces their calls) ─► next page by continue-as-new
 *
 * A child that is held for an operator (or at its key limit) tells the fleet, which stops counting
 * it against the concurrency bound; the child keeps waiting on its own (parent close: abandon).
 * A rotation that begins waiting out its quiet gate (the propagation allowance and quiet period: an hour
 * and more by default, with nothing to call but a look now and then) tells the fleet too: it leaves the
 * bound (`waiting`), the next page need not wait for it, and its settling tell reaches whichever run of
 * the fleet is current, which counts it. The last run waits until every released rotation has settled
 * (continuing as new when its history is full), so the fleet's pace is the platform's rate limit and
 * one quiet period, not the quiet period once per `concurrency` tenants.
 * A slot already rotating elsewhere is skipped, never doubled (the child id is the business key).
 * With `adopt`, the page is the active tenants with unmanaged keys in the slot and each child is an
 * adoptTenantKeys (same id, same bound); the schedule is `rotation-fleet:<slot>:adopt`.
 *
 * A run's state is one `Fleet` object (as closeTenant's `Close`): its query and signal handlers are one line each
 * calling a method; each step is a method, the flow `run()`.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  condition,
  continueAsNew,
  defineQuery,
  ParentClosePolicy,
  patched,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateFleetInput } from '../../src/domain/rotation-input.js';
import { validateWorkflowInput } from '../validate-input.js';
import { rotateTenantKey } from './rotate-tenant-key.js';
import { adoptTenantKeys } from './adopt-tenant-keys.js';
import { rotationSettledSignal, type RotationSettled } from './rotate-tenant-key-messages.js';
import { FLEET_QUIET_RELEASE_PATCH } from './key-slot-run.js';
import { fleetDatabaseStep } from '../activity-policies.js';
import { historyFull } from '../waits.js';
import { msOf } from '../../src/domain/durations.js';
import { DEFAULT_TIMINGS } from '../../src/domain/rotation-defaults.js';

export interface FleetTotals {
  started: number;
  completed: number;
  held: number;
  skipped: number;
  failed: number;
  /** Released while they wait out their quiet gate, not settled yet (absent before the fleet patch). */
  waiting?: number;
}
export interface FleetStatus {
  slot: string;
  after: string | null;
  running: number;
  totals: FleetTotals;
}

export const fleetStatusQuery = defineQuery<FleetStatus>('fleetStatus');

const db = proxyLocalActivities<Activities>(fleetDatabaseStep);

export async function rotateFleet(rawInput: RotateFleetInput): Promise<FleetTotals> {
  const input = await validateWorkflowInput('rotateFleet', rawInput, () => null);
  return new Fleet(rawInput, input).run();
}

type RotateFleetRequest = Awaited<ReturnType<typeof validateWorkflowInput<'rotateFleet'>>>;

/** One page's run of the fleet: its totals, the children it runs, what they told it; each step a method. */
class Fleet {
  private readonly totals: FleetTotals;
  private readonly running = new Set<string>();
  private readonly heldEarly = new Set<string>();
  /** Children told to wait out their quiet gate in this run: out of the bound, counted by their settling tell. */
  private readonly released = new Set<string>();
  private readonly releases: boolean;
  /** The last tenant started: where a new run goes on from. */
  private last: string | null;

  constructor(
    private readonly rawInput: RotateFleetInput,
    private readonly input: RotateFleetRequest,
  ) {
    this.totals = input.totals ?? { started: 0, completed: 0, held: 0, skipped: 0, failed: 0 };
    this.releases = !input.adopt && patched(FLEET_QUIET_RELEASE_PATCH);
    this.last = input.after;
    setHandler(fleetStatusQuery, () => this.status());
    setHandler(rotationSettledSignal, (told) => this.told(told));
  }

  async run(): Promise<FleetTotals> {
    const { input, running, totals, releases } = this;
    const page = input.adopt
      ? await db.listAdoptableTenantsPage({ slot: input.slot, after: input.after, limit: input.pageSize })
      : await db.listActiveTenantsPage({ after: input.after, limit: input.pageSize });
    for (const externalRef of page) {
      await condition(() => running.size < input.concurrency);
      if (releases && historyFull()) {
        // Settling tells of earlier pages' rotations add events too: a new run from here.
        await condition(() => running.size === 0);
        await this.continueAfterLast();
      }
      running.add(externalRef);
      this.last = externalRef;
      void this.rotateOne(externalRef)
        .catch(() => void (totals.failed += 1))
        .finally(() => running.delete(externalRef));
    }
    await condition(() => running.size === 0);
    if (page.length === input.pageSize) {
      // A new run per page keeps the history small whatever the fleet's size.
      await this.continueAfterLast();
    }
    if (releases && (totals.waiting ?? 0) > 0) await this.waitForReleased();
    return totals;
  }

  private status(): FleetStatus {
    return { slot: this.input.slot, after: this.input.after, running: this.running.size, totals: this.totals };
  }

  /** A child's tell: that it waits out its quiet gate (released), how a released one settled, or held early. */
  private told(told: RotationSettled): void {
    const { totals, releases } = this;
    if (releases && told.settles) {
      totals.waiting = (totals.waiting ?? 0) - 1;
      totals[settledAs(told.outcome)] += 1;
    } else if (releases && told.outcome === 'waiting_for_quiet') {
      totals.waiting = (totals.waiting ?? 0) + 1;
      this.released.add(told.workflowId);
    } else if (told.outcome === 'held' || told.outcome === 'key_limit') this.heldEarly.add(told.workflowId);
  }

  /**
   * One tenant's child: rotateTenantKey, or with `adopt` adoptTenantKeys (same id, same bound, same rate
   * limit). A slot already rotating (either kind) is skipped, never doubled; an adoption that ends with keys
   * kept counts as held.
   */
  private async rotateOne(externalRef: string): Promise<void> {
    const { input, totals } = this;
    const workflowId = rotationWorkflowId(externalRef, input.slot);
    const args = {
      externalRef,
      slot: input.slot,
      ...(input.deployer ? { deployer: input.deployer } : {}),
      ...(input.options ? { options: input.options } : {}),
      reason: input.adopt ? 'fleet adoption' : 'fleet rotation',
    };
    let result: Promise<{ outcome: string }>;
    try {
      const child = input.adopt
        ? await startChild(adoptTenantKeys, { workflowId, args: [args], parentClosePolicy: ParentClosePolicy.ABANDON })
        : await startChild(rotateTenantKey, { workflowId, args: [args], parentClosePolicy: ParentClosePolicy.ABANDON });
      result = child.result();
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        totals.skipped += 1;
        return;
      }
      throw error;
    }
    totals.started += 1;
    const notCompleted = input.adopt ? ('held' as const) : ('failed' as const);
    const outcome = await Promise.race([
      result.then(
        (r) => (r.outcome === 'completed' ? ('completed' as const) : notCompleted),
        () => 'failed' as const,
      ),
      condition(() => this.heldEarly.has(workflowId)).then(() => 'held' as const),
      ...(this.releases ? [condition(() => this.released.has(workflowId)).then(() => 'released' as const)] : []),
    ]);
    // A released child is counted by its settling tell, whatever came first here.
    if (outcome !== 'released' && !this.released.has(workflowId)) totals[outcome] += 1;
  }

  /**
   * The last page: every released rotation settles within its quiet deadline (held past it). One killed
   * outright never tells: past the deadline and an hour, the run ends with it counted as `waiting`.
   */
  private async waitForReleased(): Promise<void> {
    const { input, totals } = this;
    const deadlineMs = msOf(input.options?.quietDeadline ?? DEFAULT_TIMINGS.quietDeadline) + msOf('1h');
    const settled = await condition(() => (totals.waiting ?? 0) <= 0 || historyFull(), deadlineMs);
    if (settled && (totals.waiting ?? 0) > 0) await this.continueAfterLast();
  }

  /** A new run after `last`, with the totals so far (a page's end, a full history, the last run's wait). */
  private continueAfterLast(): Promise<never> {
    return continueAsNew<typeof rotateFleet>({ ...this.rawInput, after: this.last, totals: this.totals });
  }
}

/** How a settling tell counts: held (or at the key limit) as held, an abort or a failure as failed. */
function settledAs(outcome: RotationSettled['outcome']): 'completed' | 'held' | 'failed' {
  if (outcome === 'completed') return 'completed';
  return outcome === 'held' || outcome === 'key_limit' ? 'held' : 'failed';
}
