import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { tenantPlanState } from '../../db/plan-state.js';
import { findPlanTarget, findPlanVersion } from '../../db/plans-store.js';
import type { Pool } from '../../db/pool.js';
import { findTenant, listPlanTenantsPage, TenantNotFoundError } from '../../db/tenants-store.js';
import { planConvergenceWorkflowId, planRolloutWorkflowId } from '../../domain/ids.js';
import type { DecisionAnswer } from '../../domain/operator-decisions.js';
import { PLAN_SPEC_RULE, planSpecOf, type PlanRef } from '../../domain/plan-ref.js';
import {
  convergeTenantPlanInputSchema,
  planChanges,
  rolloutPlanInputSchema,
  type PlanChanges,
} from '../../domain/plan-rollout.js';
import { planLookupSchema, type PlanBody } from '../../domain/plans.js';
import { tenantExternalRefKey } from '../../domain/search-attributes.js';
import { InvalidInputError, parseCallerInput, parseInput } from '../../domain/tenant-input.js';
import { carriedFieldsOf } from '../../domain/caller-fields.js';
import { assertTenantAllows, planConvergenceRefusal } from '../../domain/tenant-rules.js';
import {
  convergeStatusQuery,
  pauseRolloutUpdate,
  resumeRolloutUpdate,
  rolloutStatusQuery,
  type ConvergeStatus,
  type ConvergeTenantPlanResult,
  type RolloutResult,
  type RolloutStatus,
} from '../../../workflows/plan-rollout-messages.js';
import { currentWaitOf, type WaitView } from '../current-wait.js';
import { PlanNotFoundError } from './plans.js';
import { queryOrNull } from '../query-run.js';
import { sendDecision } from '../send-decision.js';

/**
 * Converging tenants onto a plan version (issue 33), for tenantctl and the gateway alike:
 * - previewPlanRollout: the dry run, from our records, nothing written: per tenant what would change, refused
 *   wherever the start would be (rolloutTargetOf: one reading of the version, its key limit and `from` for both);
 * - startPlanRollout: the paced fleet run `plan-rollout:<name>@<version>` (one per version; a second start
 *   joins the first);
 * - rolloutView / decideRollout: its progress, pause and resume (Updates with validators);
 * - assignPlan: one tenant onto a version (another plan, or its plan's newer one): `plan:<ref>`.
 * Every input is checked whole before anything starts.
 */

export interface PreviewTenant {
  externalRef: string;
  from: PlanRef | null;
  changes: PlanChanges;
}

export interface RolloutPreview {
  plan: PlanRef;
  from: string;
  tenants: PreviewTenant[];
  /** Pass as `after` for the next page (null: this was the last). */
  next: string | null;
}

const PREVIEW_PAGE_MAX = 500;

/**
 * The version a rollout or an assignment brings tenants onto (absent: the plan's latest), or PlanNotFoundError;
 * refused (InvalidInputError naming `plan`) when its slots do not fit PLATFORM_TENANT_KEY_LIMIT: a version made
 * under a higher limit would hold every tenant at the platform's key cap (findPlanTarget, the rule the run's own
 * input check reads too).
 */
async function targetOf(
  pool: Pool,
  name: string,
  version: number | undefined,
  tenantKeyLimit: number | undefined,
): Promise<{ plan: PlanRef; body: PlanBody }> {
  const target = await findPlanTarget(pool, name, version, tenantKeyLimit);
  if (!target) throw new PlanNotFoundError(name, version);
  if (target.problem) throw new InvalidInputError([target.problem]);
  return { plan: { name: target.name, version: target.version }, body: target.body };
}

async function fromPlanOf(pool: Pool, from: string | undefined, plan: PlanRef): Promise<string> {
  if (from === undefined || from === plan.name) return plan.name;
  if (!(await findPlanVersion(pool, from))) throw new PlanNotFoundError(from);
  return from;
}

/**
 * What a rollout brings onto which version, by every rule its start applies after the input's own (and its run's
 * input check, through targetOf): the plan, the version and `from` exist, and the version fits the key limit. The
 * dry run and the start both read it here, so a dry run is refused wherever the start would be, in the same words.
 */
async function rolloutTargetOf(
  pool: Pool,
  lookup: { name: string; version: number | undefined; from: string | undefined },
  tenantKeyLimit: number | undefined,
): Promise<{ plan: PlanRef; body: PlanBody; from: string }> {
  const { plan, body } = await targetOf(pool, lookup.name, lookup.version, tenantKeyLimit);
  return { plan, body, from: await fromPlanOf(pool, lookup.from, plan) };
}

/** `from` by the rollout's own rule, named `from` (the dry run's query and the start's body alike). */
const rolloutFromSchema = rolloutPlanInputSchema.pick({ from: true });

export async function previewPlanRollout(
  pool: Pool,
  raw: { plan: unknown; version?: unknown; from?: unknown; after?: unknown; limit?: unknown },
  options: { tenantKeyLimit?: number | undefined } = {},
): Promise<RolloutPreview> {
  const { name, version } = parseInput(planLookupSchema, {
    name: raw.plan,
    ...(raw.version === undefined ? {} : { version: raw.version }),
  });
  const problems: string[] = [];
  const { from } = parseInput(rolloutFromSchema, raw.from === undefined ? {} : { from: raw.from });
  if (raw.after !== undefined && (typeof raw.after !== 'string' || raw.after.length === 0))
    problems.push('after: must be the external ref a previous page ended at');
  const limit = raw.limit === undefined ? 100 : Number(raw.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > PREVIEW_PAGE_MAX)
    problems.push(`limit: must be a whole number from 1 to ${PREVIEW_PAGE_MAX}`);
  if (problems.length) throw new InvalidInputError(problems);
  const { plan, body, from: fromPlan } = await rolloutTargetOf(pool, { name, version, from }, options.tenantKeyLimit);
  const refs = await listPlanTenantsPage(pool, {
    from: fromPlan,
    to: plan,
    after: (raw.after as string | undefined) ?? null,
    limit,
  });
  const tenants: PreviewTenant[] = [];
  for (const externalRef of refs) {
    const tenant = await findTenant(pool, externalRef);
    if (!tenant) continue;
    const state = await tenantPlanState(pool, tenant);
    tenants.push({ externalRef, from: state.from, changes: planChanges(state, plan, body) });
  }
  return { plan, from: fromPlan, tenants, next: refs.length === limit ? refs[refs.length - 1]! : null };
}

export interface RolloutStart {
  workflowId: string;
  runId: string;
  plan: PlanRef;
  from: string;
  /** False when a rollout of this version was running already (this call joined it). */
  started: boolean;
}

/** `raw`: plan (name), version (absent: the latest), from, concurrency, pageSize, reason, options. */
export async function startPlanRollout(
  client: Client,
  pool: Pool,
  raw: Record<string, unknown>,
  options: { actor: string; taskQueue: string; tenantKeyLimit?: number | undefined },
): Promise<RolloutStart> {
  const { name, version } = parseInput(planLookupSchema, {
    name: raw['plan'],
    ...(raw['version'] === undefined ? {} : { version: raw['version'] }),
  });
  // The whole input is checked before the plan is looked up: one answer names every bad field.
  const probe = parseCallerInput(
    rolloutPlanInputSchema,
    { ...raw, version: version ?? 1, requestedBy: options.actor },
    // The rollout's cursor is its continuation's, never a caller's (the run would skip tenants).
    carriedFieldsOf('rolloutPlan'),
  );
  const { plan, from } = await rolloutTargetOf(pool, { name, version, from: probe.from }, options.tenantKeyLimit);
  const input = { ...raw, plan: plan.name, version: plan.version, from, requestedBy: options.actor };
  const workflowId = planRolloutWorkflowId(plan);
  try {
    const handle = await client.workflow.start('rolloutPlan', {
      taskQueue: options.taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return { workflowId, runId: handle.firstExecutionRunId, plan, from, started: true };
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    const running = await client.workflow.getHandle(workflowId).describe();
    return { workflowId, runId: running.runId, plan, from, started: false };
  }
}

/** A rollout's version from `name@version` (the path or command argument). */
export function rolloutRefOf(spec: unknown): PlanRef {
  const parsed = typeof spec === 'string' ? planSpecOf(spec) : undefined;
  if (!parsed || parsed.version === undefined)
    throw new InvalidInputError([`rollout: must be a plan and its version, name@version (${PLAN_SPEC_RULE})`]);
  return { name: parsed.name, version: parsed.version };
}

/** No rollout of this version was ever started. */
export class RolloutNotFoundError extends Error {
  override name = 'RolloutNotFoundError';
}

export interface RolloutView {
  workflowId: string;
  runStatus: string;
  /** Its progress (running: the query; ended: the result); null when the run could not say in time. */
  status: RolloutStatus | RolloutResult | null;
  error: string | null;
  /** Running: what it waits for now (a pause: stage `paused`, who and why, resumeRollout), else null. */
  waiting: WaitView | null;
}

export async function rolloutView(client: Client, plan: PlanRef): Promise<RolloutView> {
  const workflowId = planRolloutWorkflowId(plan);
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe().catch((error: unknown) => {
    if ((error as Error).name === 'WorkflowNotFoundError')
      throw new RolloutNotFoundError(`no rollout of plan ${plan.name}@${plan.version} was started`);
    throw error;
  });
  const runStatus = described.status.name;
  if (runStatus === 'RUNNING') {
    const [status, waiting] = await Promise.all([queryOrNull(handle, rolloutStatusQuery), currentWaitOf(handle)]);
    return { workflowId, runStatus, status, error: null, waiting };
  }
  if (runStatus === 'COMPLETED')
    return { workflowId, runStatus, status: (await handle.result()) as RolloutResult, error: null, waiting: null };
  const error = await handle.result().then(
    () => null,
    (failure: unknown) => ((failure as Error).cause as Error | undefined)?.message ?? (failure as Error).message,
  );
  return { workflowId, runStatus, status: null, error, waiting: null };
}

export async function decideRollout(
  client: Client,
  plan: PlanRef,
  decision: 'pause' | 'resume',
  by: { operator: string; reason: unknown },
): Promise<DecisionAnswer> {
  return sendDecision(
    client,
    planRolloutWorkflowId(plan),
    decision === 'pause' ? pauseRolloutUpdate : resumeRolloutUpdate,
    { operator: by.operator, reason: by.reason as string },
  );
}

export interface AssignStart {
  workflowId: string;
  runId: string;
  plan: PlanRef;
  started: boolean;
}

/** One tenant onto `planSpec` (`pro` or `pro@2`): its convergence run `plan:<ref>`. */
export async function assignPlan(
  client: Client,
  pool: Pool,
  raw: { externalRef: unknown; plan: unknown; reason?: unknown; options?: unknown },
  options: { actor: string; taskQueue: string; tenantKeyLimit?: number | undefined },
): Promise<AssignStart> {
  const spec = typeof raw.plan === 'string' ? planSpecOf(raw.plan) : undefined;
  const probe = parseCallerInput(convergeTenantPlanInputSchema, {
    externalRef: raw.externalRef,
    plan: spec?.name ?? raw.plan,
    version: spec?.version ?? 1,
    requestedBy: options.actor,
    ...(raw.reason === undefined ? {} : { reason: raw.reason }),
    ...(raw.options === undefined ? {} : { options: raw.options }),
  });
  if (!spec) throw new InvalidInputError([`plan: must be ${PLAN_SPEC_RULE}`]);
  const { plan } = await targetOf(pool, spec.name, spec.version, options.tenantKeyLimit);
  const tenant = await findTenant(pool, probe.externalRef);
  if (!tenant) throw new TenantNotFoundError(probe.externalRef);
  assertTenantAllows(planConvergenceRefusal, tenant);
  const workflowId = planConvergenceWorkflowId(probe.externalRef);
  const input = { ...probe, plan: plan.name, version: plan.version };
  try {
    const handle = await client.workflow.start('convergeTenantPlan', {
      taskQueue: options.taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: probe.externalRef }]),
    });
    return { workflowId, runId: handle.firstExecutionRunId, plan, started: true };
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    const running = await client.workflow.getHandle(workflowId).describe();
    return { workflowId, runId: running.runId, plan, started: false };
  }
}

export interface ConvergenceView {
  workflowId: string;
  runStatus: string;
  status: ConvergeStatus | null;
  result: ConvergeTenantPlanResult | null;
  error: string | null;
}

/** No convergence run of this tenant was ever started. */
export class ConvergenceNotFoundError extends Error {
  override name = 'ConvergenceNotFoundError';
}

export async function convergenceView(client: Client, externalRef: string): Promise<ConvergenceView> {
  const workflowId = planConvergenceWorkflowId(externalRef);
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe().catch((error: unknown) => {
    if ((error as Error).name === 'WorkflowNotFoundError')
      throw new ConvergenceNotFoundError(`no plan convergence of tenant ${externalRef} was started`);
    throw error;
  });
  const runStatus = described.status.name;
  if (runStatus === 'RUNNING')
    return { workflowId, runStatus, status: await queryOrNull(handle, convergeStatusQuery), result: null, error: null };
  const outcome = await handle.result().then(
    (result) => ({ result: result as ConvergeTenantPlanResult, error: null }),
    (failure: unknown) => ({
      result: null,
      error: ((failure as Error).cause as Error | undefined)?.message ?? (failure as Error).message,
    }),
  );
  return { workflowId, runStatus, status: null, ...outcome };
}
