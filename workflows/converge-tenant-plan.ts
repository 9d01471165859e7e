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
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { executeChild, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import {
  keyIssueWorkflowId,
  keyRevokeWorkflowId,
  planConvergenceWorkflowId,
  topUpWorkflowId,
} from '../src/domain/ids.js';
import { planFundingKey } from '../src/domain/plan-ids.js';
import type { ConvergeTenantPlanInput } from '../src/domain/plan-rollout.js';
import { tenantExternalRefKey } from '../src/domain/search-attributes.js';
import { databaseStep } from './activity-policies.js';
import { fundTenant } from './fund-tenant.js';
import { issueTenantKey } from './keys/issue-tenant-key.js';
import { revokeTenantKeySlot } from './keys/revoke-tenant-key.js';
import { convergeStatusQuery, type ConvergeStatus, type ConvergeTenantPlanResult } from './plan-rollout-messages.js';
import { validateWorkflowInput } from './validate-input.js';

export * from './plan-rollout-messages.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

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
  const end = (outcome: ConvergeTenantPlanResult['outcome'], reason: string | null = null) => {
    status.stage = outcome;
    return { ...result, outcome, reason };
  };

  const read = await steps.readPlanConvergence({ externalRef, plan });
  if (read.outcome === 'not_active') return end('skipped', read.reason);
  status.from = result.from = read.from;
  status.changes = result.changes = read.changes;
  if (read.upToDate) return end('unchanged');
  const { changes } = read;
  const reason = input.reason ?? `plan ${label}`;

  // Retired slots first: a key in use holds the whole tenant before anything of the version is applied.
  status.stage = 'retiring_slots';
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
  const notRetired = retires.flatMap(({ slot, answer }) =>
    answer === 'running'
      ? [`slot ${slot}: another revoke of it is running`]
      : answer.outcome === 'refused'
        ? [`slot ${slot}: its key ${answer.keyId} was not revoked (${answer.verdict})`]
        : [],
  );
  if (notRetired.length > 0)
    return end(
      'held',
      `${notRetired.join('; ')}; the tenant stays on ` +
        `${read.from ? `${read.from.name}@${read.from.version}` : 'no plan'} until the slot is free ` +
        `(tenantctl key revoke ${externalRef} --slot <slot> when nothing uses it, then run the rollout again)`,
    );

  status.stage = 'issuing_keys';
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
    );

  if (changes.fundingMicroUsd !== null) {
    status.stage = 'funding';
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
  await steps.applyPlanVersion({ externalRef, plan, changes, requestedBy });
  return end('converged');
}
