/**
 * reconcileFleet — why: the platform changes behind our back (console suspends, hand-made keys, lost
 * responses, out-of-band money); this check finds where it and our records disagree, before a
 * customer does.
 *
 *   beginDriftCheck (unknown tenant: refused, nothing written) ─► snapshotSubaccounts (platform queue)
 *   ─► [fleet] recordUnownedSubaccounts ─► page of our records ─► findBusyTenants (skipped, never fixed)
 *   ─► per tenant: observeTenant (platform queue) ─► recordTenantDrift (findings, resolutions,
 *      database fixes) ─► revokeOrphanKey (platform queue, when the policy says fix)
 *   ─► next page by continue-as-new ─► finishDriftCheck (summary, metric log line)
 *
 * Platform-calling activities run on rotation's platform task queue, so a drift check and a fleet
 * rotation share one platform rate limit.
 *
 * The run's state is one `DriftCheck` object (as closeTenant's `Close`): its query handler one line, each
 * phase a method, the flow `run()`.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { DriftPageTenant } from '../activities/drift/check.js';
import { msOf } from '../src/domain/durations.js';
import type { ParsedReconcileFleetInput, ReconcileFleetInput } from '../src/domain/drift-input.js';
import { validateWorkflowInput } from './validate-input.js';
import { platformTaskQueue } from '../src/domain/ids.js';
import {
  describeDriftCheck,
  driftCheckStatusQuery,
  type DriftCheckStatus,
  type ReconcileFleetResult,
} from './reconcile-fleet-messages.js';
import { driftDatabaseStep, platformCall, platformListing } from './activity-policies.js';

export * from './reconcile-fleet-messages.js';

const db = proxyLocalActivities<Activities>(driftDatabaseStep);

const ENDED_RECORD = ['closed', 'cancelled', 'failed'];

export async function reconcileFleet(rawInput: ReconcileFleetInput = {}): Promise<ReconcileFleetResult> {
  const input: ParsedReconcileFleetInput = await validateWorkflowInput('reconcileFleet', rawInput ?? {}, () => null);
  return new DriftCheck(rawInput, input).run();
}

type PlatformActivities = ReturnType<typeof proxyActivities<Activities>>;

/** One page of a drift check: its totals and samples, the tenants it checks, and each phase as a method. */
class DriftCheck {
  private readonly status: DriftCheckStatus;
  private readonly platform: PlatformActivities;
  private readonly lister: PlatformActivities;
  private readonly quietPeriodMs: number | null;
  private readonly rotationMaxAgeMs: number | null;

  constructor(
    private readonly rawInput: ReconcileFleetInput,
    private readonly input: ParsedReconcileFleetInput,
  ) {
    const queue = platformTaskQueue(workflowInfo().taskQueue);
    this.platform = proxyActivities<Activities>(platformCall(queue));
    this.lister = proxyActivities<Activities>(platformListing(queue));
    const { options } = input;
    this.quietPeriodMs = options?.quietPeriod === undefined ? null : msOf(options.quietPeriod);
    this.rotationMaxAgeMs = options?.rotationMaxAge === undefined ? null : msOf(options.rotationMaxAge);
    this.status = {
      checkId: input.checkId ?? null,
      scope: input.externalRef ?? 'fleet',
      phase: 'starting',
      after: input.after,
      subaccountsListed: null,
      totals: input.totals ?? { tenantsChecked: 0, skipped: 0, fixesApplied: 0, findingsSeen: 0, failed: 0 },
      skipped: input.skippedSample ?? [],
      fixes: input.fixesSample ?? [],
      openByKind: null,
    };
    setHandler(driftCheckStatusQuery, () => this.status);
    this.move('starting');
  }

  /** The flow: the check begun once (first run), one page of tenants, the next page or the summary. */
  async run(): Promise<ReconcileFleetResult> {
    const { input, status } = this;
    const checkId = input.checkId ?? (await this.begin());
    this.move('checking_tenants');
    const page = await this.checkPage(checkId);
    status.after = page.at(-1)?.externalRef ?? status.after;
    describeDriftCheck(status);
    if (!input.externalRef && page.length === input.pageSize) {
      // A new run per page keeps the history small whatever the fleet's size.
      await continueAsNew<typeof reconcileFleet>({
        ...this.rawInput,
        checkId,
        after: status.after,
        totals: status.totals,
        skippedSample: status.skipped,
        fixesSample: status.fixes,
      });
    }
    return this.finish(checkId);
  }

  /** The check's record, the platform's subaccounts snapshot and (fleet) the unowned ones. */
  private async begin(): Promise<string> {
    const { input, status } = this;
    const begun = await db.beginDriftCheck({
      externalRef: input.externalRef ?? null,
      workflowId: workflowInfo().workflowId,
    });
    const checkId = (status.checkId = begun.checkId);
    this.move('listing_subaccounts');
    status.subaccountsListed = (await this.lister.snapshotSubaccounts({ checkId })).count;
    if (!input.externalRef) await db.recordUnownedSubaccounts({ checkId });
    return checkId;
  }

  /** One page of our records: busy tenants skipped, the rest checked `concurrency` at a time. */
  private async checkPage(checkId: string): Promise<DriftPageTenant[]> {
    const { input, status } = this;
    const page = await db.loadDriftPage({
      checkId,
      externalRef: input.externalRef ?? null,
      after: input.after,
      limit: input.pageSize,
    });
    const { busy, visibility } = page.length
      ? await db.findBusyTenants({ tenants: page.map((t) => ({ externalRef: t.externalRef, status: t.status })) })
      : { busy: {}, visibility: false };
    let running = 0;
    for (const tenant of page) {
      const reason = busy[tenant.externalRef];
      if (reason) {
        status.totals.skipped += 1;
        if (status.skipped.length < 50) status.skipped.push({ externalRef: tenant.externalRef, reason });
        continue;
      }
      await condition(() => running < input.concurrency);
      running += 1;
      void this.checkOne(checkId, tenant, visibility)
        .catch((error: unknown) => {
          // One tenant's failure (after its retries) must not stop the fleet: counted and shown.
          status.totals.failed += 1;
          if (status.skipped.length < 50)
            status.skipped.push({ externalRef: tenant.externalRef, reason: `check failed (${failureType(error)})` });
        })
        .finally(() => (running -= 1));
    }
    await condition(() => running === 0);
    return page;
  }

  /** One tenant observed, its drift recorded (database fixes), orphan keys revoked when the policy says fix. */
  private async checkOne(checkId: string, tenant: DriftPageTenant, onboardingProvenIdle: boolean): Promise<void> {
    const { status, platform, quietPeriodMs } = this;
    const observation =
      tenant.listed && tenant.subaccountId
        ? await platform.observeTenant({
            subaccountId: tenant.subaccountId,
            withProjects: ENDED_RECORD.includes(tenant.status),
          })
        : null;
    const recorded = await db.recordTenantDrift({
      checkId,
      externalRef: tenant.externalRef,
      observation,
      onboardingProvenIdle,
      quietPeriodMs,
      rotationMaxAgeMs: this.rotationMaxAgeMs,
    });
    status.totals.tenantsChecked += 1;
    status.totals.findingsSeen += recorded.findings.length;
    status.totals.fixesApplied += recorded.fixesApplied.length;
    noteFixes(status, recorded.fixesApplied);
    for (const fix of recorded.platformFixes) {
      const outcome = await platform.revokeOrphanKey({ findingId: fix.findingId, quietPeriodMs });
      if (outcome.outcome === 'revoked') {
        status.totals.fixesApplied += 1;
        noteFixes(status, [{ kind: fix.kind, subject: fix.subject, fix: 'revoke_orphan_key' }]);
      }
    }
  }

  /** The last page is done: the check's summary (open findings by kind) and its result. */
  private async finish(checkId: string): Promise<ReconcileFleetResult> {
    const { status } = this;
    this.move('finishing');
    const summary = await db.finishDriftCheck({ checkId, totals: { ...status.totals } });
    status.openByKind = summary.openByKind;
    this.move('finished');
    return {
      checkId,
      scope: status.scope,
      totals: status.totals,
      skipped: status.skipped,
      fixes: status.fixes,
      openByKind: summary.openByKind,
      openTotal: summary.openTotal,
    };
  }

  private move(phase: DriftCheckStatus['phase']): void {
    this.status.phase = phase;
    describeDriftCheck(this.status);
  }
}

/** The fixes a check lists (its totals count them all), carried from page to page like the skipped sample. */
const FIXES_SAMPLE_MAX = 200;

function noteFixes(status: DriftCheckStatus, fixes: ReadonlyArray<DriftCheckStatus['fixes'][number]>): void {
  for (const fix of fixes) if (status.fixes.length < FIXES_SAMPLE_MAX) status.fixes.push({ ...fix });
}

function failureType(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure ? (cause.type ?? 'error') : 'error';
}
