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
  const { externalRef, requestedBy } = input;
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
  const plan = { name: input.plan, version: input.version };
  const label = `${plan.name}@${plan.version}`;
  const status: ConvergeStatus = { externalRef, plan, stage: 'reading', from: null, changes: null };
  setHandler(convergeStatusQuery, () => status);
  const result: ConvergeTenantPlanResult = {
    externalRef,
    outcome: 'unchanged',
    from: null,
    to: plan,
    changes: null,
    keys: [],
    retired: [],
    funding: null,
    reason: null,
  };
  const details = (extra: string[] = []) =>
    setCurrentDetails(
      [`**${status.stage}** — \`${externalRef}\` from ${planLabel(status.from)} onto ${label}`, ...extra].join('\n\n'),
    );
  const end = (outcome: ConvergeTenantPlanResult['outcome'], reason: string | null = null, held: HeldSlot[] = []) => {
    status.stage = outcome;
    if (patched(PLAN_OUTCOME_ATTRIBUTE_PATCH))
      upsertSearchAttributes([{ key: tenantStatusKey, value: planOutcomeTenantStatus(outcome) }]);
    if (outcome === 'held') {
      const parent = workflowInfo().parent?.workflowId ?? null;
      const words = planHoldWords({ externalRef, from: status.from, to: plan, rollout: parent, slots: held });
      details([...words.holds, ...words.wayOut.map((step) => `way out: ${step}`)]);
    } else details(reason ? [reason] : []);
    return { ...result, outcome, reason };
  };
  details();

  const read = await steps.readPlanConvergence({ externalRef, plan });
  if (read.outcome === 'not_active') return end('skipped', read.reason);
  status.from = result.from = read.from;
  status.changes = result.changes = read.changes;
  if (read.upToDate) return end('unchanged');
  const { changes } = read;
  const reason = input.reason ?? `plan ${label}`;

  // Retired slots first: a key in use holds the whole tenant before anything of the version is applied.
  status.stage = 'retiring_slots';
  details();
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
              operator: requestedBy,
              reason: `${reason}: plan ${label} retires slot ${slot}`,
              ...(input.options ? { options: input.options } : {}),
            },
          ],
        }),
      ),
    })),
  );
  for (const { slot, answer } of retires)
    if (answer !== 'running' && answer.outcome === 'revoked') result.retired.push({ slot, keyId: answer.keyId });
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
  if (notRetired.length > 0)
    return end(
      'held',
      `${notRetired.join('; ')}; the tenant stays on ` +
        `${read.from ? `${read.from.name}@${read.from.version}` : 'no plan'} until the slot is free ` +
        `(tenantctl key revoke ${externalRef} --slot <slot> when nothing uses it, then run the rollout again)`,
      heldSlots,
    );

  status.stage = 'issuing_keys';
  details();
  const issues = await Promise.all(
    changes.slotsAdded.map(async (slot) => ({
      slot,
      answer: await unlessHeld(() =>
        executeChild(issueTenantKey, {
          workflowId: keyIssueWorkflowId(externalRef, slot),
          args: [{ externalRef, slot, operator: requestedBy }],
        }),
      ),
    })),
  );
  for (const { slot, answer } of issues)
    if (answer !== 'running') result.keys.push({ slot, keyId: answer.keyId, outcome: answer.outcome });
  const busy = issues.filter(({ answer }) => answer === 'running').map(({ slot }) => slot);
  if (busy.length > 0)
    return end(
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

  if (changes.fundingMicroUsd !== null) {
    status.stage = 'funding';
    details();
    const idempotencyKey = planFundingKey(plan);
    const funded = await unlessHeld(() =>
      executeChild(fundTenant, {
        workflowId: topUpWorkflowId(externalRef, idempotencyKey),
        args: [
          {
            externalRef,
            idempotencyKey,
            amountMicroUsd: changes.fundingMicroUsd!,
            reason: `plan ${label} upgrade funding`,
            requestedBy,
          },
        ],
      }),
    );
    // 'running': the same key's top-up was started before (this run's earlier attempt): it is that transfer.
    result.funding = { idempotencyKey, state: funded === 'running' ? 'started' : funded.state };
  }

  status.stage = 'applying';
  details();
  await steps.applyPlanVersion({ externalRef, plan, changes, requestedBy });
  return end('converged');
}
