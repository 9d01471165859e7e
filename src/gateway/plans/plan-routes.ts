import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import {
  assignPlan,
  convergenceView,
  previewPlanRollout,
  rolloutView,
  startPlanRollout,
} from '../../client/plans/plan-rollout.js';
import { createPlan, listPlans, showPlan, updatePlan } from '../../client/plans/plans.js';
import type { Pool } from '../../client/records.js';
import { findTenantRecord } from '../../client/tenant-records.js';
import { REASON_TEXT } from '../../domain/operator-decisions.js';
import { planVersionSchema, type PlanRef } from '../../domain/plan-ref.js';
import { convergeOptionsSchema, ROLLOUT_START_FIELDS, rolloutStartBodySchema } from '../../domain/plan-rollout.js';
import { createPlanInputSchema, planNameSchema, updatePlanInputSchema } from '../../domain/plans.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { freeText } from '../../domain/text.js';
import { callerOf } from '../http/access.js';
import { anyArray, anyObject, decisionBody, doc, externalRefParam } from '../http/api-docs.js';
import { invalidInput, tenantNotFound, sendData } from '../http/errors.js';
import { accepted, bodyOf, refOf } from '../http/request-input.js';
import { decideForRun, type RunDecisionDeps } from '../http/run-decisions.js';
import { z } from 'zod';

/**
 * Plans (issue 33): `POST /v1/plans` (version 1 of a new plan), `GET /v1/plans`, `GET /v1/plans/:name`
 * (`?version=N`; absent: the latest) and `POST /v1/plans/:name/versions` (the next version, the whole new
 * body, `expectVersion` to refuse it unless the latest is that one). Reading needs `tenants.read`, writing
 * `plans.manage` (admins). Who made a version is the bearer's name, never a body field.
 *
 * Convergence (docs/plans.md#rolling-out-a-new-version): `GET /v1/plans/:name/rollout-preview` (the dry run,
 * per tenant what would change), `POST /v1/plans/:name/rollouts` (start or join `plan-rollout:<name>@<version>`),
 * `GET /v1/plans/:name/rollouts/:version` (its progress), `POST …/rollouts/:version/pause|resume` (Updates: the
 * run's validator is the judge, a refusal is 409 naming why), and for one tenant `POST|GET
 * /v1/tenants/:externalRef/plan` (`plan:<ref>`). Who started, paused or assigned is the bearer's name.
 */
/** The dry run's query: a field it does not know is refused by name, as the start refuses one in its body. */
const PREVIEW_FIELDS = ['version', 'from', 'after', 'limit'] as const;
const ASSIGN_FIELDS = ['plan', 'reason', 'options'] as const;
const ROLLOUT_DECISIONS = ['pause', 'resume'] as const;

export async function planRoutes(
  api: FastifyInstance,
  deps: {
    pool: Pool;
    client: Client;
    taskQueue: string;
    maxTransferMicroUsd?: string | undefined;
    /** PLATFORM_TENANT_KEY_LIMIT (absent: its default): a plan over it is refused when written or carried out. */
    tenantKeyLimit?: number | undefined;
    decisions: RunDecisionDeps;
  },
): Promise<void> {
  const writeOptions = (request: Parameters<typeof callerOf>[0]) => ({
    actor: callerOf(request).name,
    maxTransferMicroUsd: deps.maxTransferMicroUsd,
    tenantKeyLimit: deps.tenantKeyLimit,
  });

  api.post('/plans', { config: { permission: 'plans.manage' }, schema: createDoc }, async (request, reply) =>
    sendData(reply, 201, await createPlan(deps.pool, request.body ?? {}, writeOptions(request))),
  );
  api.get('/plans', { config: { permission: 'tenants.read' }, schema: listDoc }, async (_request, reply) =>
    sendData(reply, 200, await listPlans(deps.pool)),
  );
  api.get('/plans/:name', { config: { permission: 'tenants.read' }, schema: showDoc }, async (request, reply) => {
    const { name } = request.params as { name: string };
    const { version } = request.query as { version?: string };
    return sendData(reply, 200, await showPlan(deps.pool, name, version));
  });
  api.post(
    '/plans/:name/versions',
    { config: { permission: 'plans.manage' }, schema: updateDoc },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      return sendData(reply, 201, await updatePlan(deps.pool, name, request.body ?? {}, writeOptions(request)));
    },
  );

  api.get(
    '/plans/:name/rollout-preview',
    { config: { permission: 'tenants.read' }, schema: previewDoc },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      const { version, from, after, limit } = bodyOf(request.query, PREVIEW_FIELDS);
      return sendData(
        reply,
        200,
        await previewPlanRollout(
          deps.pool,
          {
            plan: name,
            ...(version === undefined ? {} : { version }),
            ...(from === undefined ? {} : { from }),
            ...(after === undefined ? {} : { after }),
            ...(limit === undefined ? {} : { limit }),
          },
          { tenantKeyLimit: deps.tenantKeyLimit },
        ),
      );
    },
  );

  api.post(
    '/plans/:name/rollouts',
    { config: { permission: 'plans.manage' }, schema: startRolloutDoc },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      const body = bodyOf(request.body, ROLLOUT_START_FIELDS);
      const started = await startPlanRollout(
        deps.client,
        deps.pool,
        { ...body, plan: name },
        { actor: callerOf(request).name, taskQueue: deps.taskQueue, tenantKeyLimit: deps.tenantKeyLimit },
      );
      return accepted(reply, rolloutUrl(started.plan), { ...started, statusUrl: rolloutUrl(started.plan) });
    },
  );

  api.get(
    '/plans/:name/rollouts/:version',
    { config: { permission: 'tenants.read' }, schema: rolloutDoc },
    async (request, reply) => sendData(reply, 200, await rolloutView(deps.client, rolloutOf(request.params))),
  );

  api.post(
    '/plans/:name/rollouts/:version/:decision',
    { config: { permission: 'plans.manage' }, schema: rolloutDecisionDoc },
    async (request, reply) => {
      const { decision } = request.params as { decision: string };
      const plan = rolloutOf(request.params);
      const decided = await decideForRun(
        deps.decisions,
        request,
        { kind: 'plan-rollout', plan },
        decision,
        request.body,
      );
      const { workflowId: _id, decision: _name, ...answered } = decided.data;
      return sendData(reply, 200, { plan, decision, ...answered });
    },
  );

  api.post(
    '/tenants/:externalRef/plan',
    { config: { permission: 'plans.manage' }, schema: assignDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const body = bodyOf(request.body, ASSIGN_FIELDS);
      const started = await assignPlan(
        deps.client,
        deps.pool,
        { ...body, externalRef, plan: body['plan'] },
        { actor: callerOf(request).name, taskQueue: deps.taskQueue, tenantKeyLimit: deps.tenantKeyLimit },
      );
      const statusUrl = `/v1/tenants/${encodeURIComponent(externalRef)}/plan`;
      return accepted(reply, statusUrl, { externalRef, ...started, statusUrl });
    },
  );

  api.get(
    '/tenants/:externalRef/plan',
    { config: { permission: 'tenants.read' }, schema: convergenceDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      if (!(await findTenantRecord(deps.pool, externalRef))) throw tenantNotFound();
      return sendData(reply, 200, await convergenceView(deps.client, externalRef));
    },
  );
}

const rolloutUrl = (plan: PlanRef) => `/v1/plans/${encodeURIComponent(plan.name)}/rollouts/${plan.version}`;

/** The rollout a path names: the plan's name and the version, each by its own rule (400 naming it). */
function rolloutOf(params: unknown): PlanRef {
  const { name, version } = params as { name?: unknown; version?: unknown };
  const problems: string[] = [];
  const parsedName = planNameSchema.safeParse(name);
  if (!parsedName.success) problems.push(`name: ${parsedName.error.issues[0]?.message ?? 'invalid'}`);
  const parsedVersion = planVersionSchema.safeParse(version);
  if (!parsedVersion.success) problems.push(`version: ${parsedVersion.error.issues[0]?.message ?? 'invalid'}`);
  if (!parsedName.success || !parsedVersion.success) throw invalidInput(new InvalidInputError(problems));
  return { name: parsedName.data, version: parsedVersion.data };
}

const nameParam = { name: planNameSchema };
const versionParam = {
  type: 'string',
  pattern: '^[1-9][0-9]{0,9}$',
  description: 'The plan version the rollout brings its tenants onto.',
};
const planVersion = {
  description:
    'One version of a plan: `name`, `version`, `latestVersion`, `plan` (its body), `createdAt`, ' +
    '`createdBy` (who made it), `reason`.',
  data: anyObject,
};

const createDoc = doc({
  summary: 'Create a plan: its version 1',
  description:
    'The body is the plan (`keySlots` required; `initialFundingMicroUsd`, `rotation`, `autoTopUp`, ' +
    '`resumeBalanceFloorMicroUsd`, `closeDelay` optional) with its `name` and an optional `reason`. ' +
    'Who made it is the bearer token. Amounts sent in one transfer stay within TRANSFER_MAX_MICRO_USD; the ' +
    'slots, with `default`, at most PLATFORM_TENANT_KEY_LIMIT − 1 (a key kept free for a rotation).',
  body: createPlanInputSchema,
  answers: { 201: planVersion, 409: 'A plan of this name exists already: make a new version (PLAN_EXISTS).' },
});

const listDoc = doc({
  summary: 'Every plan: its latest version, when it was made and last changed',
  answers: {
    200: { description: '`name`, `latestVersion`, `createdAt`, `updatedAt`, `updatedBy` each.', data: anyArray },
  },
});

const showDoc = doc({
  summary: 'A version of a plan (the latest unless `version` names one)',
  params: nameParam,
  query: { version: { type: 'string', pattern: '^[1-9][0-9]{0,9}$', description: 'A version (absent: the latest).' } },
  answers: { 200: planVersion, 404: 'No such plan, or no such version of it (PLAN_NOT_FOUND).' },
});

const updateDoc = doc({
  summary: 'Update a plan: its next version, with the whole new body (versions are never changed)',
  description:
    'With `expectVersion`, refused unless the latest version is that one (someone else updated it meanwhile). ' +
    'Who made it is the bearer token.',
  params: nameParam,
  body: updatePlanInputSchema,
  answers: {
    201: planVersion,
    404: 'No plan of this name (PLAN_NOT_FOUND).',
    409:
      'The latest version is not `expectVersion`, or another update made the next version first ' +
      '(PLAN_VERSION_CONFLICT).',
  },
});

const previewDoc = doc({
  summary: 'The dry run of a rollout: per tenant, what moving it onto the version would change (nothing is written)',
  description:
    'The active tenants on `from` (default: the plan itself) not yet on the version, a page at a time in external ' +
    'ref order, each with `from` (its version) and `changes`: `slotsRetired` (keys revoked through the quiet gate), ' +
    '`slotsAdded` (keys issued), `fundingMicroUsd` (the upgrade funding, once per tenant and version), ' +
    '`schedulesSet`, `schedulesRemoved` and `policy` (`set`, `removed`, `unchanged`). `next` is the `after` of ' +
    'the next page (null: the last). Refused wherever the start would be refused for its version and `from`.',
  params: nameParam,
  query: {
    version: { type: 'string', pattern: '^[1-9][0-9]{0,9}$', description: 'The version (absent: the latest).' },
    from: { type: 'string', description: 'Move the tenants of this plan (absent: the plan itself).' },
    after: { type: 'string', description: 'Start after this external ref (the `next` of a page).' },
    limit: { type: 'string', pattern: '^[0-9]+$', description: 'Tenants per page, 1-500 (default 100).' },
  },
  answers: {
    200: { description: '`plan`, `from`, `tenants` [{ externalRef, from, changes }], `next`.', data: anyObject },
    400:
      'A query value breaks its rule or is not a field of the dry run, or the version does not fit ' +
      'PLATFORM_TENANT_KEY_LIMIT (`plan`), as the start would refuse it; `fields` names it (INVALID_INPUT).',
    404: 'No such plan or version, or no plan `from` (PLAN_NOT_FOUND).',
  },
});

const startRolloutDoc = doc({
  summary: "Start (or join) the rollout of a plan version to the plan's tenants",
  description:
    'The paced fleet run `plan-rollout:<name>@<version>` (absent `version`: the latest): every active tenant on ' +
    '`from` (default: the plan itself) not yet on the version is converged by its own run `plan:<ref>`, at most ' +
    '`concurrency` at once, under the platform rate limit. A second start while one runs joins it (`started: ' +
    'false`); once it ended, a start runs it again (tenants already on the version are not listed). Who started ' +
    "it is the bearer token. `options` are the quiet gate's timings of the keys the version retires (`quietPeriod`, " +
    '`pollInterval`, `quietDeadline`, `overlapWindow`, as a key revoke takes them). `tenantctl plans rollout` has ' +
    'a flag for each field. Follow it at the status URL.',
  params: nameParam,
  body: rolloutStartBodySchema,
  bodyOptional: true,
  answers: {
    202: { description: '`workflowId`, `runId`, `plan`, `from`, `started`, `statusUrl`.', data: anyObject },
    404: 'No such plan or version, or no plan `from` (PLAN_NOT_FOUND).',
  },
});

const rolloutDoc = doc({
  summary: "A rollout's progress: stage, pause, totals, held and failed tenants",
  description:
    '`runStatus` (RUNNING, COMPLETED, …), `status` (running: `stage` running|paused, `paused` {by, reason, since}, ' +
    '`running`, `concurrency`, `totals` {started, converged, unchanged, held, skipped, failed}, up to 50 `held` and ' +
    '`failed` tenants with why; completed: the result, stage finished), `error` (a run that failed) and `waiting` ' +
    '(a pause, as every wait is shown).',
  params: { ...nameParam, version: versionParam },
  answers: {
    200: { description: 'The rollout.', data: anyObject },
    400: 'The name or version breaks its rule; `fields` names it (INVALID_INPUT).',
    404: 'No rollout of this version was started (ROLLOUT_NOT_FOUND).',
  },
});

const rolloutDecisionDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: 'Pause a rollout (no tenant is started until it is resumed; those running finish) or resume it',
  description:
    "Sent as the run's Update (`pauseRollout`, `resumeRollout`), whose validator decides whether it applies now: " +
    'a pause of a paused rollout or a resume of a running one is 409 naming why. Who decided is the bearer token.',
  params: {
    ...nameParam,
    version: versionParam,
    decision: { type: 'string', enum: [...ROLLOUT_DECISIONS] },
  },
  body: decisionBody(),
  answers: {
    200: {
      description: "`plan`, `decision`, and the run's answer: `stage` (paused, running) and `effect`.",
      data: anyObject,
    },
    404: 'No running rollout of this version (RUN_NOT_FOUND), or no such decision (ROUTE_NOT_FOUND).',
    409:
      'The rollout refuses the decision now: it is not running (pause) or not paused (resume) ' +
      '(DECISION_NOT_APPLICABLE).',
  },
});

const assignBody = z.strictObject({
  plan: z.string().describe('A plan name (its latest version) or name@version, e.g. pro or pro@2.'),
  reason: freeText(REASON_TEXT).optional(),
  options: convergeOptionsSchema.optional(),
});

const assignDoc = doc({
  summary: "Move one tenant onto a plan version (another plan, or its plan's newer one)",
  description:
    "The tenant's convergence run `plan:<ref>`: retired slots' keys through the quiet gate first (a key in use " +
    'holds the tenant on its version, nothing applied), then a key per new slot, the upgrade funding once per ' +
    'tenant and version, schedules, policy and the version with `tenant.plan_changed`. A second call while it runs ' +
    'joins it. Who assigned is the bearer token.',
  params: externalRefParam,
  body: assignBody,
  answers: {
    202: { description: '`externalRef`, `workflowId`, `runId`, `plan`, `started`, `statusUrl`.', data: anyObject },
    404: 'No tenant with this external ref (TENANT_NOT_FOUND), or no such plan or version (PLAN_NOT_FOUND).',
    409: 'The tenant is closing or closed (TENANT_CLOSED) or not active (TENANT_NOT_ACTIVE).',
  },
});

const convergenceDoc = doc({
  summary: "The tenant's latest plan convergence: its stage while running, its result once ended",
  description:
    '`runStatus`, `status` (running: stage, from, changes), `result` (completed: `outcome` converged | unchanged | ' +
    'held | skipped, `from`, `to`, `changes`, `keys`, `retired`, `funding`, `reason`) and `error` (a run that failed).',
  params: externalRefParam,
  answers: {
    200: { description: 'The convergence.', data: anyObject },
    404: 'No tenant with this external ref (TENANT_NOT_FOUND), or no convergence of it ran (RUN_NOT_FOUND).',
  },
});
