import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { delayMs, startLifecycle } from '../../client/tenants/start-lifecycle.js';
import { closeDelayOf } from '../../client/tenants/close-delay.js';
import { startOnboarding } from '../../client/tenants/start-onboarding.js';
import type { Pool } from '../../client/records.js';
import { findTenantRecord } from '../../client/tenant-records.js';
import { listTenantRows } from '../../client/tenants/tenant-list.js';
import { externalRefSchema, onboardTenantInputSchema } from '../../domain/tenant-input.js';
import { startRotation } from '../../client/keys/start-rotation.js';
import type { DeployerReadiness } from '../../client/keys/deployer-readiness.js';
import { getTenantStatus } from '../../client/tenants/tenant-status.js';
import { actionInputOf, type ActionInput } from './action-input.js';
import { actorOf, callerOf } from '../http/access.js';
import { roleAllows } from '../../domain/roles.js';
import type { PlatformClient } from '../../platform/index.js';
import type { Vault } from '../../secrets/vault.js';
import { dryRunOnboarding } from '../../client/tenants/onboarding-preflight.js';
import { getCloseStatement } from '../../client/tenants/close-statement.js';
import { GatewayError, GatewayErrorCode, sendData, tenantNotFound } from '../http/errors.js';
import { accepted, refOf } from '../http/request-input.js';
import { anyObject, doc, externalRefParam, fromZod } from '../http/api-docs.js';
import { lifecycleBodySchema, rotateBodySchema } from './action-input.js';

/**
 * The trigger and status API for signup backends (any language): bearer-token auth on every route,
 * the platform's envelope on every answer. Customer-supplied external refs are mapped through our
 * ownership records before anything else happens: an unknown one is a 404 with no workflow started.
 */
export interface TenantRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  publicUrl: string | undefined;
  deployers: DeployerReadiness;
  closeDelay: string;
  platform: PlatformClient | undefined;
  /** TRANSFER_MAX_MICRO_USD (absent: its default). */
  maxTransferMicroUsd?: string | undefined;
  /** PLATFORM_TENANT_KEY_LIMIT (absent: its default): onboarding by plan refuses a plan over it. */
  tenantKeyLimit?: number | undefined;
  /** Seals an admin's close sooner than the minimum for the run, which holds every other start to it. */
  vault?: Vault | undefined;
  /**
   * RESUME_BALANCE_FLOOR_MICRO_USD: a resume below it (or its plan's floor) is refused up front, read with `platform`.
   */
  resumeBalanceFloorMicroUsd?: string | undefined;
}

const ACTIONS = ['suspend', 'resume', 'close', 'rotate'] as const;
type Action = (typeof ACTIONS)[number];

export async function tenantRoutes(api: FastifyInstance, deps: TenantRoutesDeps): Promise<void> {
  const statusUrl = (externalRef: string) => `${deps.publicUrl ?? ''}/v1/tenants/${encodeURIComponent(externalRef)}`;

  api.post('/tenants', { config: { permission: 'tenants.onboard' }, schema: onboardDoc }, async (request, reply) => {
    const { dryRun } = request.query as { dryRun?: string };
    if (dryRun !== undefined && dryRun !== 'true' && dryRun !== 'false')
      throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, 'dryRun: must be true or false', {
        fields: ['dryRun'],
      });
    if (dryRun === 'true') {
      if (!deps.platform)
        throw new GatewayError(
          503,
          GatewayErrorCode.PREFLIGHT_FAILED,
          'This gateway has no PLATFORM_BASE_URL / PLATFORM_API_KEY to ask the platform with.',
        );
      const platform = deps.platform;
      const report = await dryRunOnboarding({ pool: deps.pool, client: deps.client, platform }, request.body, {
        maxTransferMicroUsd: deps.maxTransferMicroUsd,
        tenantKeyLimit: deps.tenantKeyLimit,
      });
      return sendData(reply, report.ok ? 200 : 422, report);
    }
    const handle = await startOnboarding(deps.client, request.body, {
      taskQueue: deps.taskQueue,
      maxTransferMicroUsd: deps.maxTransferMicroUsd,
      tenantKeyLimit: deps.tenantKeyLimit,
      db: deps.pool,
    });
    const externalRef = (request.body as { externalRef: string }).externalRef;
    return accepted(reply, statusUrl(externalRef), {
      externalRef,
      workflowId: handle.workflowId,
      started: handle.started,
      statusUrl: statusUrl(externalRef),
    });
  });

  // Who the bearer is, as the server sees it (every role may ask): name and role.
  api.get('/whoami', { config: { permission: 'tenants.read' }, schema: whoamiDoc }, async (request, reply) =>
    sendData(reply, 200, callerOf(request)),
  );

  api.get('/tenants', { config: { permission: 'tenants.read' }, schema: listDoc }, async (request, reply) => {
    const query = request.query as { limit?: string; after?: string; attention?: string };
    const limit = query.limit === undefined ? 100 : Number(query.limit);
    const problems: Array<[string, string]> = [];
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      problems.push(['limit', 'limit: must be a whole number from 1 to 1000']);
    const after = query.after === undefined ? undefined : externalRefSchema.safeParse(query.after);
    if (after && !after.success) problems.push(['after', 'after: must be an external ref']);
    if (query.attention !== undefined && query.attention !== 'true' && query.attention !== 'false')
      problems.push(['attention', 'attention: must be true or false']);
    if (problems.length > 0)
      throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, problems.map(([, p]) => p).join('; '), {
        fields: problems.map(([field]) => field),
      });
    const rows = await listTenantRows(
      { pool: deps.pool, client: deps.client },
      { limit, ...(after?.success ? { after: after.data } : {}), attention: query.attention === 'true' },
    );
    return sendData(reply, 200, rows);
  });

  api.get(
    '/tenants/:externalRef',
    { config: { permission: 'tenants.read' }, schema: statusDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(reply, 200, await getTenantStatus({ pool: deps.pool, client: deps.client }, externalRef));
    },
  );

  api.get(
    '/tenants/:externalRef/statement',
    { config: { permission: 'tenants.read' }, schema: statementDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(reply, 200, await getCloseStatement(deps.pool, externalRef));
    },
  );

  api.post(
    '/tenants/:externalRef/:action',
    { config: { permission: 'tenants.lifecycle' }, schema: actionDoc },
    async (request, reply) => {
      const { action } = request.params as { action: string };
      if (!(ACTIONS as readonly string[]).includes(action)) {
        throw new GatewayError(
          404,
          GatewayErrorCode.ROUTE_NOT_FOUND,
          `No such action; use one of ${ACTIONS.join(', ')}.`,
        );
      }
      const externalRef = refOf(request.params);
      // The body is validated whole before any lookup or start: a 202 means the input was valid.
      const parsed = actionInputOf(action as Action, externalRef, request.body);
      const operator = actorOf(request, (request.body as { operator?: unknown } | undefined)?.operator, 'operator');
      if (parsed.action === 'rotate') parsed.operator = operator;
      else parsed.input.operator = operator;
      const tenant = await findTenantRecord(deps.pool, externalRef);
      if (!tenant) throw tenantNotFound();
      if (!tenant.subaccountId) {
        throw new GatewayError(
          409,
          GatewayErrorCode.TENANT_NOT_PROVISIONED,
          'The tenant has no sub-account yet: wait for onboarding to finish.',
        );
      }
      const closeSooner = roleAllows(callerOf(request).role, 'close.immediate');
      const started = await startAction(deps, parsed, closeSooner);
      return accepted(reply, statusUrl(externalRef), {
        externalRef,
        action,
        ...started,
        statusUrl: statusUrl(externalRef),
      });
    },
  );
}

/**
 * Through the same start helpers as the CLI: one run per business key (a second call while one runs
 * joins it; an emergency rotation escalates a running one). A rotation is checked by its starter,
 * with our records: a tenant that may not be rotated, a slot only an adoption rotates and a deployer
 * this configuration cannot run are refused there rather than failing in the worker.
 */
async function startAction(
  deps: TenantRoutesDeps,
  parsed: ActionInput,
  closeSooner: boolean,
): Promise<{ workflowId: string; runId: string | null; started?: boolean }> {
  if (parsed.action !== 'rotate') {
    // A tenant on a plan closes after its plan's delay where that is the longer one.
    const close =
      parsed.action === 'close'
        ? await closeDelayOf(deps.pool, (parsed.input as { externalRef: string }).externalRef, deps.closeDelay, delayMs)
        : { delay: deps.closeDelay, from: undefined };
    const handle = await startLifecycle(deps.client, parsed.action, parsed.input, {
      taskQueue: deps.taskQueue,
      closeDelay: close.delay,
      ...(close.from ? { closeDelayFrom: close.from } : {}),
      closeSooner,
      vault: deps.vault,
      db: deps.pool,
      ...(deps.platform ? { platform: deps.platform } : {}),
      ...(deps.resumeBalanceFloorMicroUsd ? { resumeFloorMicroUsd: deps.resumeBalanceFloorMicroUsd } : {}),
    });
    return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
  }
  const handle = await startRotation(deps.client, parsed.input, {
    taskQueue: deps.taskQueue,
    deployers: deps.deployers,
    db: deps.pool,
    ...(parsed.operator ? { operator: parsed.operator } : {}),
  });
  // A joined rotation is a handle on the running one: its run id is in the status URL.
  const runId =
    'firstExecutionRunId' in handle && typeof handle.firstExecutionRunId === 'string'
      ? handle.firstExecutionRunId
      : null;
  return { workflowId: handle.workflowId, runId, started: handle.started };
}

const tenantNotFoundAnswer = 'No tenant with this external ref (TENANT_NOT_FOUND).';

const onboardDoc = doc({
  summary: 'Start (or join) the onboarding of a tenant',
  description:
    'Idempotent on externalRef: repeated or concurrent calls give one onboarding; poll the status URL. ' +
    'With `?dryRun=true`, every check runs against our records and the platform and nothing is written or started.',
  query: { dryRun: { type: 'string', enum: ['true', 'false'] } },
  body: onboardTenantInputSchema,
  answers: {
    202: {
      description: 'Started, or already running or done; Location is the status URL.',
      data: {
        type: 'object',
        required: ['externalRef', 'workflowId', 'started', 'statusUrl'],
        properties: {
          externalRef: { type: 'string' },
          workflowId: { type: 'string' },
          started: { type: 'boolean' },
          statusUrl: { type: 'string' },
        },
      },
    },
    200: { description: 'dryRun: every check passed (`{ dryRun, ok, checks, plan }`).' },
    409: 'The external ref is being onboarded under another name (EXTERNAL_REF_CONFLICT).',
    422: { description: 'dryRun: a check cannot pass (the same report, `ok: false`).' },
    503: 'dryRun on a gateway without platform credentials (PREFLIGHT_FAILED).',
  },
});

const whoamiDoc = doc({
  summary: 'Who the bearer is, as the server sees it',
  answers: {
    200: {
      description: 'Name and role.',
      data: {
        type: 'object',
        required: ['name', 'role'],
        properties: { name: { type: 'string' }, role: { type: 'string' } },
      },
    },
  },
});

/** One thing that waits for a person (src/client/tenants/attention.ts). */
const attentionItemSchema = {
  type: 'object',
  required: ['workflowId', 'stage', 'lines', 'wayOut'],
  properties: {
    workflowId: { type: 'string', description: 'The run that waits, or the plan convergence that ended held.' },
    stage: { type: 'string', description: "The wait's stage, or `held` for a tenant held off a plan version." },
    lines: {
      type: 'array',
      items: { type: 'string' },
      description: 'What waits: the current wait as `--wait` prints it, or what holds the tenant.',
    },
    wayOut: {
      type: 'array',
      items: { type: 'string' },
      description: 'What ends it: the decisions that apply, or the commands that end the hold, in order.',
    },
  },
};

const planRefSchema = {
  type: ['object', 'null'],
  required: ['name', 'version'],
  properties: { name: { type: 'string' }, version: { type: 'integer' } },
};

const listDoc = doc({
  summary:
    'Our tenants, by external ref (pages of `limit`, after `after`), each with its plan and what waits for a person',
  description:
    '`attention` lists what of the tenant waits for a person: a run in a wait only a person ends (its current ' +
    'wait and the decisions that apply) and a hold off a plan version (what holds it and the way out); empty when ' +
    'nothing does. With `attention=true` only the tenants with something in it are listed.',
  query: {
    limit: { type: 'string', pattern: '^[0-9]+$', description: '1-1000; default 100.' },
    after: externalRefSchema,
    attention: {
      type: 'string',
      enum: ['true', 'false'],
      description: 'true: only the tenants with a run (or a plan hold) that waits for a person.',
    },
  },
  answers: {
    200: {
      description: 'The tenants.',
      data: {
        type: 'array',
        items: {
          type: 'object',
          required: ['externalRef', 'name', 'status', 'subaccountId', 'createdAt', 'plan', 'attention'],
          properties: {
            externalRef: { type: 'string' },
            name: { type: 'string' },
            status: { type: 'string' },
            subaccountId: { type: ['string', 'null'] },
            createdAt: { type: 'string' },
            plan: { ...planRefSchema, description: 'The plan version it is on (null: none).' },
            attention: { type: 'array', items: attentionItemSchema },
          },
        },
      },
    },
    400: 'limit, after or attention breaks its rule (INVALID_INPUT).',
  },
});

const statusDoc = doc({
  summary: "A tenant's records, every run that concerns it, its plan and what waits for a person",
  description:
    '`lastRuns`: every run that concerns the tenant, the last of each kind (onboard or import, issue, rotate and ' +
    'revoke per slot, suspend, resume, close, plan convergence, every running top-up and the latest ended ones) ' +
    'with `status`, `outcome`, `waiting` when it waits, `partOf` (the run that started it), and for a run that did ' +
    'not complete `failure: { message, type, causes }`. `plan`: the version it is on and its latest convergence ' +
    '(from, to, stage or outcome, the rollout it is part of, and when held `hold`: the slots, each key and its last ' +
    'use, and the way out). `fleetRuns`: the fleet runs it is part of, with their waits. `attention`: what waits ' +
    'for a person. Never a secret: keys appear as id and fingerprint.',
  params: externalRefParam,
  answers: {
    200: {
      description: 'The status.',
      data: {
        type: 'object',
        required: ['lastRuns', 'plan', 'fleetRuns', 'attention'],
        properties: {
          lastRuns: { type: 'array', items: { type: 'object' } },
          plan: {
            type: 'object',
            required: ['on', 'convergence'],
            properties: {
              on: planRefSchema,
              convergence: {
                type: ['object', 'null'],
                properties: {
                  workflowId: { type: 'string' },
                  status: { type: 'string' },
                  from: planRefSchema,
                  to: planRefSchema,
                  stage: { type: ['string', 'null'] },
                  outcome: { type: ['string', 'null'], enum: ['converged', 'unchanged', 'held', 'skipped', null] },
                  reason: { type: ['string', 'null'] },
                  partOf: { type: ['string', 'null'] },
                  hold: {
                    type: ['object', 'null'],
                    required: ['slots', 'holds', 'wayOut'],
                    properties: {
                      slots: {
                        type: 'array',
                        items: {
                          type: 'object',
                          required: ['slot', 'state', 'workflowId', 'keyId', 'lastUsedAt', 'verdict'],
                          properties: {
                            slot: { type: 'string' },
                            state: {
                              type: 'string',
                              enum: ['revoke_refused', 'revoke_running', 'revoked', 'issue_running'],
                            },
                            workflowId: { type: 'string' },
                            keyId: { type: ['string', 'null'] },
                            lastUsedAt: { type: ['string', 'null'] },
                            verdict: { type: ['string', 'null'] },
                          },
                        },
                      },
                      holds: { type: 'array', items: { type: 'string' } },
                      wayOut: { type: 'array', items: { type: 'string' } },
                    },
                  },
                },
              },
            },
          },
          fleetRuns: {
            type: 'array',
            items: {
              type: 'object',
              required: ['workflowId', 'type', 'status', 'via', 'waiting'],
              properties: {
                workflowId: { type: 'string' },
                type: { type: 'string' },
                status: { type: 'string' },
                via: { type: 'string' },
                waiting: { type: ['object', 'null'] },
              },
            },
          },
          attention: { type: 'array', items: attentionItemSchema },
        },
      },
    },
    400: 'The external ref breaks its rule (INVALID_INPUT).',
    404: tenantNotFoundAnswer,
  },
});

const statementDoc = doc({
  summary: "A closed tenant's final statement (transfers, balance left, keys, projects deleted, audit; no secret)",
  params: externalRefParam,
  answers: {
    200: { description: 'The statement.', data: anyObject },
    404: 'Unknown tenant (TENANT_NOT_FOUND) or no statement yet (STATEMENT_NOT_FOUND).',
  },
});

const actionDoc = doc({
  summary: 'Start (or join) suspendTenant, resumeTenant, closeTenant or rotateTenantKey for a tenant of ours',
  description:
    'The body is checked whole before any lookup or start: a 202 means the input was valid. suspend, resume and ' +
    'close take `{ reason, after?, options? }`; rotate takes the rotation input (slot, deployer, emergency, ' +
    'timings). `operator` is taken from the bearer token (it may only repeat its name).',
  params: { ...externalRefParam, action: { type: 'string', enum: ['suspend', 'resume', 'close', 'rotate'] } },
  body: { anyOf: [fromZod(lifecycleBodySchema), fromZod(rotateBodySchema)] },
  bodyOptional: true,
  answers: {
    202: {
      description: 'Started or joined; poll the status URL until this run is no longer RUNNING.',
      data: {
        type: 'object',
        required: ['externalRef', 'action', 'workflowId', 'statusUrl'],
        properties: {
          externalRef: { type: 'string' },
          action: { type: 'string' },
          workflowId: { type: 'string' },
          runId: { type: ['string', 'null'] },
          started: { type: 'boolean' },
          statusUrl: { type: 'string' },
        },
      },
    },
    404: `${tenantNotFoundAnswer} Or no such action (ROUTE_NOT_FOUND).`,
    409:
      'No sub-account yet (TENANT_NOT_PROVISIONED); suspend, resume, rotate: closing or closed (TENANT_CLOSED); ' +
      'resume: a delayed close waits out its window (CLOSE_SCHEDULED), or the wallet is below the resume floor ' +
      '(BALANCE_BELOW_FLOOR, naming the floor); rotate: not active (TENANT_NOT_ACTIVE), or only unmanaged keys in ' +
      'the slot (ROTATION_CONFLICT).',
    422: 'rotate: the deployer is not configured on this gateway (DEPLOYER_NOT_CONFIGURED).',
  },
});
