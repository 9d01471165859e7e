import { closeDelayFor } from '../src/db/plan-state.js';
import { findPlanTarget } from '../src/db/plans-store.js';
import type { Pool } from '../src/db/pool.js';
import { CLOSE_SOONER_RULE } from '../src/domain/caller-fields.js';
import { closeDelayMinimumProblem, closeDelayMs } from '../src/domain/durations.js';
import { lifecycleAfterProblem, type LifecycleRequest } from '../src/domain/tenant-input.js';
import { openCloseSoonerGrant } from '../src/secrets/close-sooner-grant.js';
import type { Vault } from '../src/secrets/vault.js';

/**
 * The server's policy a workflow input is held to, whoever started the run (the gateway, tenantctl, a schedule,
 * the Web UI's Start Workflow, any Temporal client): the rules the starters apply, read from the worker's own
 * configuration and our records. Each answers `field: rule` problems, as the starters' InvalidInputError does, so
 * a run refused here and an HTTP start refused there say the same thing.
 */
export interface InputPolicy {
  /** CLOSE_DELAY: a close's default delay and its minimum, which only an admin's sealed grant undercuts. */
  closeDelay?: string | undefined;
  /** PLATFORM_TENANT_KEY_LIMIT (absent: its default): a plan carried out must leave a key free under it. */
  tenantKeyLimit?: number | undefined;
  /** Our records: a plan's closeDelay and a plan version's slots (absent: neither is read). */
  pool?: Pool | undefined;
  /** Opens an admin's close-sooner grant (absent: none opens). */
  vault?: Vault | undefined;
}

/** What the check knows of the run besides its input. */
export interface RunFacts {
  workflowType: string;
  workflowId: string | null;
  /** The run continued as new: its own carried state, checked by the run that began it. */
  continuedRun: boolean;
  startedAtMs: number | undefined;
}

const LIFECYCLE_ACTIONS = { suspendTenant: 'suspend', resumeTenant: 'resume', closeTenant: 'close' } as const;

/**
 * suspendTenant / resumeTenant / closeTenant. A close's `after` is no shorter than the minimum (CLOSE_DELAY, or
 * the tenant's plan's longer closeDelay) unless the starter sealed an admin's grant for exactly this close and
 * delay; absent, it is that minimum, as the starters make it. The input the run goes on with has its delay
 * decided (`after` absent: at once) and no grant.
 */
export async function lifecyclePolicy(
  policy: InputPolicy,
  parsed: LifecycleRequest,
  run: RunFacts,
): Promise<{ problems: string[]; input: LifecycleRequest }> {
  const action = LIFECYCLE_ACTIONS[run.workflowType as keyof typeof LIFECYCLE_ACTIONS] ?? 'close';
  const { closeSooner, ...input } = parsed;
  if (action !== 'close') {
    const problems = [lifecycleAfterProblem(action, parsed.after)].filter((p): p is string => p !== null);
    if (closeSooner !== undefined) problems.push(`closeSooner: ${CLOSE_SOONER_RULE}`);
    return { problems, input };
  }
  // A continued close carries its window's end: its delay was decided by the run that began it.
  if (run.continuedRun) return { problems: [], input };
  const server = policy.closeDelay ?? '0';
  const { delay: minimum, from } = policy.pool
    ? await closeDelayFor(policy.pool, parsed.externalRef, server, closeDelayMs)
    : { delay: server, from: undefined };
  const problems: string[] = [];
  let granted = false;
  if (closeSooner !== undefined) {
    const grant =
      policy.vault && run.workflowId !== null && run.startedAtMs !== undefined
        ? openCloseSoonerGrant(policy.vault, closeSooner, run.workflowId, run.startedAtMs)
        : null;
    if (!grant || grant.after !== (parsed.after ?? '0'))
      problems.push(`closeSooner: not a grant this server made for this close and delay in the last minutes`);
    else granted = true;
  }
  // The starter drops an admin's `0` (at once); a start without a grant takes the minimum, as a starter's does.
  const after = parsed.after ?? (granted ? '0' : minimum);
  const tooSoon = granted ? null : closeDelayMinimumProblem(after, minimum, from);
  if (tooSoon) problems.push(tooSoon);
  delete input.after;
  return { problems, input: closeDelayMs(after) > 0 ? { ...input, after } : input };
}

/**
 * convergeTenantPlan / rolloutPlan: the version exists and its slots leave a key free under the worker's
 * PLATFORM_TENANT_KEY_LIMIT, else every tenant it reaches would wait at the platform's key cap. The starters, the
 * rollout's dry run and this check read the version by one function (findPlanTarget), so they say the same.
 */
export async function planPolicy(
  policy: InputPolicy,
  parsed: { plan: string; version: number },
  run: RunFacts,
): Promise<string[]> {
  if (!policy.pool || run.continuedRun) return [];
  const target = await findPlanTarget(policy.pool, parsed.plan, parsed.version, policy.tenantKeyLimit);
  if (!target) return [`plan: plan ${parsed.plan} has no version ${parsed.version}`];
  return target.problem ? [target.problem] : [];
}
