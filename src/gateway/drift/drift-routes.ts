import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { controlDriftSchedule, describeDriftSchedule, scheduleDriftCheck } from '../../client/drift/drift-schedules.js';
import { SCHEDULE_EVERY } from '../../client/schedule-every.js';
import { describeRun } from '../../client/run-status.js';
import { startDriftCheck } from '../../client/drift/start-drift-check.js';
import { listDriftFindings } from '../../client/drift/drift-findings.js';
import type { Pool } from '../../client/records.js';
import { driftCheckWorkflowId } from '../../domain/ids.js';
import { externalRefSchema, InvalidInputError } from '../../domain/tenant-input.js';
import type { ReconcileFleetResult } from '../../../workflows/reconcile-fleet-messages.js';
import { callerOf } from '../http/access.js';
import { invalidInput, sendData } from '../http/errors.js';
import { bodyOf, pathCommand } from '../http/request-input.js';
import { reconcileFleetInputSchema } from '../../domain/drift-input.js';
import { anyArray, anyObject, doc, fromZod } from '../http/api-docs.js';

/**
 * Drift, for operators (`tenantctl drift ...` is a client of these):
 * - `POST /v1/drift/checks` starts (or joins) a check of the fleet (`{ "fleet": true }`) or of one
 *   tenant (`{ "externalRef" }`), with optional `options` overriding the worker's timings; a check
 *   calls the platform for every tenant it covers, so the fleet is named, never implied;
 * - `GET /v1/drift/checks/latest?tenant=R` is `{ run, findings }`: the latest check of that scope and,
 *   once it completed, the open findings it saw (what `drift check --wait` polls);
 * - `GET /v1/drift/findings?open=true&tenant=R&limit=N`;
 * - the fleet check's Schedule: `GET|POST /v1/drift/schedule`, `POST /v1/drift/schedule/:command`.
 * The schedule's default interval is the server's (DRIFT_SCHEDULE_EVERY), never the caller's.
 */
export interface DriftRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  /** DRIFT_SCHEDULE_EVERY: the interval a schedule gets when the caller names none. */
  scheduleEvery: string;
}

const CHECK_FIELDS = ['fleet', 'externalRef', 'options'];
const SCHEDULE_FIELDS = ['every', 'jitter'];
const SCHEDULE_COMMANDS = ['pause', 'unpause', 'delete', 'run-now'] as const;

export async function driftRoutes(api: FastifyInstance, deps: DriftRoutesDeps): Promise<void> {
  api.post('/checks', { config: { permission: 'fleet.manage' }, schema: checkDoc }, async (request, reply) => {
    const body = bodyOf(request.body, CHECK_FIELDS);
    const problems: string[] = [];
    if (body.fleet !== undefined && body.fleet !== true) problems.push('fleet: must be true when given');
    if ((body.fleet === true) === (body.externalRef !== undefined))
      problems.push('externalRef: name one tenant, or the whole fleet with fleet: true (not both)');
    if (problems.length) throw invalidInput(new InvalidInputError(problems));
    const handle = await startDriftCheck(
      { client: deps.client, pool: deps.pool },
      {
        ...(body.externalRef !== undefined ? { externalRef: body.externalRef as string } : {}),
        ...(body.options !== undefined ? { options: body.options as never } : {}),
      },
      { taskQueue: deps.taskQueue },
    );
    return sendData(reply, 202, { workflowId: handle.workflowId });
  });

  api.get('/checks/latest', { config: { permission: 'tenants.read' }, schema: latestDoc }, async (request, reply) => {
    const { tenant } = request.query as { tenant?: string };
    const externalRef = tenant === undefined ? undefined : refOfQuery(tenant, 'tenant');
    const run = await describeRun<ReconcileFleetResult>(deps.client, driftCheckWorkflowId(externalRef));
    const findings =
      run?.status === 'COMPLETED' && run.result
        ? (await listDriftFindings(deps.pool, { openOnly: true, ...(externalRef ? { externalRef } : {}) })).filter(
            (f) => f.lastCheckId === run.result!.checkId,
          )
        : [];
    return sendData(reply, 200, { run, findings });
  });

  api.get('/findings', { config: { permission: 'tenants.read' }, schema: findingsDoc }, async (request, reply) => {
    const query = request.query as { open?: string; tenant?: string; limit?: string };
    const problems: string[] = [];
    if (query.open !== undefined && query.open !== 'true' && query.open !== 'false')
      problems.push('open: must be true or false');
    if (query.limit !== undefined && !/^[1-9][0-9]{0,5}$/.test(query.limit))
      problems.push('limit: must be a positive whole number');
    if (problems.length) throw invalidInput(new InvalidInputError(problems));
    const externalRef = query.tenant === undefined ? undefined : refOfQuery(query.tenant, 'tenant');
    const rows = await listDriftFindings(deps.pool, {
      openOnly: query.open === 'true',
      ...(externalRef ? { externalRef } : {}),
      limit: query.limit === undefined ? 500 : Number(query.limit),
    });
    return sendData(reply, 200, rows);
  });

  api.get('/schedule', { config: { permission: 'tenants.read' }, schema: showScheduleDoc }, async (_request, reply) =>
    sendData(reply, 200, { schedule: await describeDriftSchedule(deps.client), defaultEvery: deps.scheduleEvery }),
  );

  api.post('/schedule', { config: { permission: 'fleet.manage' }, schema: scheduleDoc }, async (request, reply) => {
    const body = bodyOf(request.body, SCHEDULE_FIELDS);
    // Named, not defaulted: an empty body makes nothing (the server's default is in GET's defaultEvery).
    const problems = [
      ...(typeof body.every === 'string' && SCHEDULE_EVERY.test(body.every)
        ? []
        : ['every: must be a duration like 1h or 30m']),
      ...(body.jitter === undefined || (typeof body.jitter === 'string' && SCHEDULE_EVERY.test(body.jitter))
        ? []
        : ['jitter: must be a duration like 5m']),
    ];
    if (problems.length) throw invalidInput(new InvalidInputError(problems));
    const made = await scheduleDriftCheck(
      deps.client,
      {},
      { every: body.every as string, jitter: body.jitter as string | undefined },
      deps.taskQueue,
    );
    return sendData(reply, 200, made);
  });

  api.post(
    '/schedule/:command',
    { config: { permission: 'fleet.manage' }, schema: scheduleCommandDoc },
    async (request, reply) => {
      const command = pathCommand(request.params, SCHEDULE_COMMANDS);
      await controlDriftSchedule(deps.client, command);
      request.log.info({ command, by: callerOf(request).name }, 'drift schedule command');
      return sendData(reply, 200, { command });
    },
  );
}

function refOfQuery(value: string, field: string): string {
  const parsed = externalRefSchema.safeParse(value);
  if (!parsed.success) throw invalidInput(new InvalidInputError([`${field}: must be an external ref`]));
  return parsed.data;
}

const every = { type: 'string', pattern: SCHEDULE_EVERY.source };
const tenantQuery = { ...fromZod(externalRefSchema), description: 'One tenant (default: the fleet).' };

const checkDoc = doc({
  summary: 'Start (or join) a drift check of the fleet (`fleet: true`) or of one tenant (`externalRef`)',
  description: 'A check calls the platform for every tenant it covers, so the fleet is named, never implied.',
  body: {
    type: 'object',
    additionalProperties: false,
    properties: {
      fleet: { const: true },
      externalRef: fromZod(externalRefSchema),
      options: fromZod(reconcileFleetInputSchema.shape.options),
    },
  },
  answers: {
    202: {
      description: 'Started or joined.',
      data: { type: 'object', required: ['workflowId'], properties: { workflowId: { type: 'string' } } },
    },
    404: 'No such tenant (TENANT_NOT_FOUND).',
  },
});

const latestDoc = doc({
  summary: 'The latest check of a scope and, once it completed, the open findings it saw',
  query: { tenant: tenantQuery },
  answers: {
    200: {
      description: '`{ run, findings }`.',
      data: {
        type: 'object',
        required: ['run', 'findings'],
        properties: { run: { type: ['object', 'null'] }, findings: anyArray },
      },
    },
    400: 'tenant breaks the external ref rule (INVALID_INPUT).',
  },
});

const findingsDoc = doc({
  summary: 'Drift findings (open only with `open=true`)',
  query: {
    open: { type: 'string', enum: ['true', 'false'] },
    tenant: tenantQuery,
    limit: { type: 'string', pattern: '^[1-9][0-9]{0,5}$', description: 'Default 500.' },
  },
  answers: {
    200: { description: 'The findings.', data: anyArray },
    400: 'A query parameter breaks its rule (INVALID_INPUT).',
  },
});

const showScheduleDoc = doc({
  summary: "The fleet check's Schedule, and the server's default interval (DRIFT_SCHEDULE_EVERY)",
  answers: { 200: { description: '`{ schedule, defaultEvery }`.', data: anyObject } },
});

const scheduleDoc = doc({
  summary: "Create or update the fleet check's Schedule (`every` named, never defaulted)",
  body: {
    type: 'object',
    required: ['every'],
    additionalProperties: false,
    properties: { every, jitter: every },
  },
  answers: { 200: { description: 'The schedule.', data: anyObject } },
});

const scheduleCommandDoc = doc({
  summary: "Pause, unpause, delete or run the fleet check's Schedule now",
  params: { command: { type: 'string', enum: [...SCHEDULE_COMMANDS] } },
  answers: {
    200: { description: 'Done.', data: anyObject },
    404: 'No schedule (SCHEDULE_NOT_FOUND), or no such command (ROUTE_NOT_FOUND).',
  },
});
