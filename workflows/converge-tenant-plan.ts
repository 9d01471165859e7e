/**
 * convergeTenantPlan — why: a tenant moved onto a plan version (a new version of its plan, or another plan)
 * must end with exactly what the version says, each key issued once and no key in use revoked.
 *
 *   validate ─► readPlanConvergence (our records: what changes) ─► up to date / not active: done
 *   ─► retire: revokeTenantKeySlot per slot the old version declared and the new one drops (quiet gate;
 *      a key in use is refused ─► held: nothing else applied, the tenant stays on its version)
 *   ─► issue: issueTenantKey per new slot ─► fund: fundTenant for the version's upgrade funding (one caller
 *      key per tenant and version) ─► applyPlanVersion (schedules, policy, version, tenant.plan_changed)
 *
 * Every step is a run with a business id or an idempotent write, so a retried or restarted convergence does
 * each thing once: a slot's child answers `existing` when the key is there, a top-up under the same key is the
 * same transfer, and the version's event is written only by the transaction that moves the tenant.
 *
 * Visible (issue 47): its stage, and when held what holds it and the way out, in the Web UI's current details
 * (the words of src/domain/plan-hold.ts, as `tenantctl status` says them); its outcome in TenantStatus
 * (`plan:<outcome>`), so one visibility query finds every tenant held off a version.
 *
 * The run's state is one `Convergence` object (as closeTenant's `Close`): its query handler one line, each
 * phase a method, the flow `run()`.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  executeChild,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import {
  keyIssueWorkflowId,
  keyRevokeWorkflowId,
  planConvergenceWorkflowId,
  topUpWorkflowId,
} from '../src/domain/ids.js';
import { planOutcomeTenantStatus } from '../src/domain/attention.js';
import { planFundingKey } from '../src/domain/plan-ids.js';
import { planHoldWords, type HeldSlot } from '../src/domain/plan-hold.js';
import type { ConvergeTenantPlanInput } from '../src/domain/plan-rollout.js';
import { tenantExternalRefKey, tenantStatusKey } from '../src/domain/search-attributes.js';
import { databaseStep } from './activity-policies.js';
import { fundTenant } from './fund-tenant.js';
import { issueTenantKey } from './keys/issue-tenant-key.js';
import { revokeTenantKeySlot } from './keys/revoke-tenant-key.js';
import { convergeStatusQuery, type ConvergeStatus, type ConvergeTenantPlanResult } from './plan-rollout-messages.js';
import type { ParsedWorkflowInput } from '../activities/input-validation.js';
import { validateWorkflowInput } from './validate-input.js';

export * from './plan-rollout-messages.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

/**
 * 1.0 compatibility: a convergence sets TenantStatus `plan:<outcome>` when it ends (issue 47). Runs recorded
 * before it end without that command.
 */
export const PLAN_OUTCOME_ATTRIBUTE_PATCH = 'plan-outcome-attribute';

const planLabel = (plan: { name: string; version: number } | null) =>
  plan ? `${plan.name}@${plan.version}` : 'no plan';

/** A child that another run already holds (the same business id): the slot is that run's until it ends. */
async function unlessHeld<T>(run: () => Promise<T>): Promise<T | 'running'> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'running';
    throw error;
  }
}

export async function convergeTenantPlan(rawInput: ConvergeTenantPlanInput): Promise<ConvergeTenantPlanResult> {
  const input = await validateWorkflowInput('convergeTenantPlan', rawInput, (i) =>
    planConvergenceWorkflowId(i.externalRef),
  );
  return new Convergence(input).run();
}

type Input = ParsedWorkflowInput<'convergeTenantPlan'>;
type Changes = NonNullable<ConvergeStatus['changes']>;
type Outcome = ConvergeTenantPlanResult['outcome'];

/** One tenant's move onto a plan version: where it stands, what it did, and each phase as a method. */
class Convergence {
  private readonly externalRef: string;
  private readonly plan: ConvergeStatus['plan'];
  private readonly label: string;
  private readonly status: ConvergeStatus;
  private readonly result: ConvergeTenantPlanResult;

  constructor(private readonly input: Input) {
    const { externalRef } = input;
    this.externalRef = externalRef;
    upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
    this.plan = { name: input.plan, version: input.version };
    this.label = `${this.plan.name}@${this.plan.version}`;
    this.status = { externalRef, plan: this.plan, stage: 'reading', from: null, changes: null };
    setHandler(convergeStatusQuery, () => this.status);
    this.result = {
      externalRef,
      outcome: 'unchanged',
      from: null,
      to: this.plan,
      changes: null,
      keys: [],
      retired: [],
      funding: null,
      reason: null,
    };
  }

  /** The flow: read what changes, then retire, issue, fund and apply, ending early when held. */
  async run(): Promise<ConvergeTenantPlanResult> {
    const { externalRef, plan, status, result } = this;
    this.details();
    const read = await steps.readPlanConvergence({ externalRef, plan });
    if (read.outcome === 'not_active') return this.end('skipped', read.reason);
    status.from = result.from = read.from;
    status.changes = result.changes = read.changes;
    if (read.upToDate) return this.end('unchanged');
    const { changes } = read;
    const held = (await this.retireSlots(changes)) ?? (await this.issueKeys(changes));
    if (held) return held;
    if (changes.fundingMicroUsd !== null) await this.fund(changes.fundingMicroUsd);
    this.enter('applying');
    await steps.applyPlanVersion({ externalRef, plan, changes, requestedBy: this.input.requestedBy });
    return this.end('converged');
  }

  /** Retired slots first: a key in use holds the whole tenant before anything of the version is applied. */
  private async retireSlots(changes: Changes): Promise<ConvergeTenantPlanResult | null> {
    const { externalRef, input, label } = this;
    const reason = input.reason ?? `plan ${label}`;
    this.enter('retiring_slots');
    const retires = await Promise.all(
      changes.slotsRetired.map(async (slot) => ({
        slot,
        answer: await unlessHeld(() =>
          executeChild(revokeTenantKeySlot, {
            workflowId: keyRevokeWorkflowId(externalRef, slot),
            args: [
              {
                externalRef,
                slot,
                operator: input.requestedBy,
                reason: `${reason}: plan ${label} retires slot ${slot}`,
                ...(input.options ? { options: input.options } : {}),
              },
            ],
          }),
        ),
      })),
    );
    for (const { slot, answer } of retires)
      if (answer !== 'running' && answer.outcome === 'revoked') this.result.retired.push({ slot, keyId: answer.keyId });
    const heldSlots = retires.flatMap(({ slot, answer }): HeldSlot[] => {
      if (answer !== 'running' && answer.outcome !== 'refused') return [];
      const refused = answer === 'running' ? null : answer;
      return [
        {
          slot,
          state: refused ? 'revoke_refused' : 'revoke_running',
          workflowId: keyRevokeWorkflowId(externalRef, slot),
          keyId: refused?.keyId ?? null,
          lastUsedAt: refused?.lastUsedAt ?? null,
          verdict: refused?.verdict ?? null,
        },
      ];
    });
    const notRetired = heldSlots.map((held) =>
      held.state === 'revoke_running'
        ? `slot ${held.slot}: another revoke of it is running`
        : `slot ${held.slot}: its key ${held.keyId} was not revoked (${held.verdict})`,
    );
    if (notRetired.length === 0) return null;
    const from = this.status.from;
    return this.end(
      'held',
      `${notRetired.join('; ')}; the tenant stays on ` +
        `${from ? `${from.name}@${from.version}` : 'no plan'} until the slot is free ` +
        `(tenantctl key revoke ${externalRef} --slot <slot> when nothing uses it, then run the rollout again)`,
      heldSlots,
    );
  }

  /** A key per new slot; another issue of a slot running holds the tenant. */
  private async issueKeys(changes: Changes): Promise<ConvergeTenantPlanResult | null> {
    const { externalRef } = this;
    this.enter('issuing_keys');
    const issues = await Promise.all(
      changes.slotsAdded.map(async (slot) => ({
        slot,
        answer: await unlessHeld(() =>
          executeChild(issueTenantKey, {
            workflowId: keyIssueWorkflowId(externalRef, slot),
            args: [{ externalRef, slot, operator: this.input.requestedBy }],
          }),
        ),
      })),
    );
    for (const { slot, answer } of issues)
      if (answer !== 'running') this.result.keys.push({ slot, keyId: answer.keyId, outcome: answer.outcome });
    const busy = issues.filter(({ answer }) => answer === 'running').map(({ slot }) => slot);
    if (busy.length === 0) return null;
    return this.end(
      'held',
      `another key issue of slot ${busy.join(', ')} is running (tenantctl key list ${externalRef} shows its wait); ` +
        'run the rollout again once it ends',
      busy.map((slot) => ({
        slot,
        state: 'issue_running' as const,
        workflowId: keyIssueWorkflowId(externalRef, slot),
        keyId: null,
        lastUsedAt: null,
        verdict: null,
      })),
    );
  }

  /** The version's upgrade funding: one caller key per tenant and version. */
  private async fund(amountMicroUsd: string): Promise<void> {
    const { externalRef, plan, label } = this;
    this.enter('funding');
    const idempotencyKey = planFundingKey(plan);
    const funded = await unlessHeld(() =>
      executeChild(fundTenant, {
        workflowId: topUpWorkflowId(externalRef, idempotencyKey),
        args: [
          {
            externalRef,
            idempotencyKey,
            amountMicroUsd,
            reason: `plan ${label} upgrade funding`,
            requestedBy: this.input.requestedBy,
          },
        ],
      }),
    );
    // 'running': the same key's top-up was started before (this run's earlier attempt): it is that transfer.
    this.result.funding = { idempotencyKey, state: funded === 'running' ? 'started' : funded.state };
  }

  private enter(stage: ConvergeStatus['stage']): void {
    this.status.stage = stage;
    this.details();
  }

  private end(outcome: Outcome, reason: string | null = null, held: HeldSlot[] = []): ConvergeTenantPlanResult {
    const { status, externalRef } = this;
    status.stage = outcome;
    if (patched(PLAN_OUTCOME_ATTRIBUTE_PATCH))
      upsertSearchAttributes([{ key: tenantStatusKey, value: planOutcomeTenantStatus(outcome) }]);
    if (outcome === 'held') {
      const parent = workflowInfo().parent?.workflowId ?? null;
      const words = planHoldWords({ externalRef, from: status.from, to: this.plan, rollout: parent, slots: held });
      this.details([...words.holds, ...words.wayOut.map((step) => `way out: ${step}`)]);
    } else this.details(reason ? [reason] : []);
    return { ...this.result, outcome, reason };
  }

  private details(extra: string[] = []): void {
    const { status } = this;
    setCurrentDetails(
      [
        `**${status.stage}** — \`${this.externalRef}\` from ${planLabel(status.from)} onto ${this.label}`,
        ...extra,
      ].join('\n\n'),
    );
  }
}
