import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { startAdoption } from '../../client/keys/start-rotation.js';
import { describeRun } from '../../client/run-status.js';
import {
  controlSchedule,
  listRotationSchedules,
  scheduleFleetRotation,
  scheduleTenantRotation,
  type ScheduleCommand,
} from '../../client/keys/rotation-schedules.js';
import { SCHEDULE_EVERY } from '../../client/schedule-every.js';
import { assertDeployerReady, type DeployerReadiness } from '../../client/keys/deployer-readiness.js';
import type { Pool } from '../../client/records.js';
import { rotationWorkflowId } from '../../domain/ids.js';
import { rotateFleetInputSchema, rotateTenantKeyInputSchema } from '../../domain/rotation-input.js';
import { InvalidInputError, parseInput, slotSchema } from '../../domain/tenant-input.js';
import { callerOf } from '../http/access.js';
import { GatewayError, GatewayErrorCode, invalidInput, sendData } from '../http/errors.js';
import { accepted, pathCommand, refOf } from '../http/request-input.js';
import { asBefore, decideForRun, type RunDecisionDeps } from '../http/run-decisions.js';
import { z } from 'zod';
import { adoptTenantKeysInputSchema } from '../../domain/import-input.js';
import { anyArray, anyObject, decisionBody, doc, externalRefParam, fromZod } from '../http/api-docs.js';

/**
 * Key rotation beyond `POST /v1/tenants/:ref/rotate` (tenant-routes.ts), for operators:
 * - `POST /v1/tenants/:ref/adopt` starts an adoption of an imported tenant's unmanaged keys;
 * - `GET /v1/tenants/:ref/rotations/:slot` is `{ run }`, the latest run of the slot with its result
 *   (what `tenantctl rotate-key --wait` polls);
 * - `POST /v1/tenants/:ref/rotations/:slot/<decision>` sends revoke-anyway, abort or retry-key-create
 *   (`{ "reason" }`) as the run's Update, or cancels the rotation; the run's validator is the one
 *   judge (a decision that does not apply now is a 409 naming why);
 * - `/v1/rotation-schedules`: create or update, list, and pause|unpause|delete|run-now a schedule.
 * Who decides is always the bearer's name.
 */
export interface RotationRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  publicUrl: string | undefined;
  deployers: DeployerReadiness;
  decisions: RunDecisionDeps;
}

const SCHEDULE_COMMANDS: readonly ScheduleCommand[] = ['pause', 'unpause', 'delete', 'run-now'];

export async function rotationRoutes(api: FastifyInstance, deps: RotationRoutesDeps): Promise<void> {
  const statusUrl = (externalRef: string) => `${deps.publicUrl ?? ''}/v1/tenants/${encodeURIComponent(externalRef)}`;

  api.post(
    '/tenants/:externalRef/adopt',
    { config: { permission: 'tenants.lifecycle' }, schema: adoptDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const body = (request.body ?? {}) as Record<string, unknown>;
      const handle = await startAdoption(
        { client: deps.client, db: deps.pool },
        { ...body, externalRef },
        { taskQueue: deps.taskQueue, deployers: deps.deployers },
      );
      return accepted(reply, statusUrl(externalRef), {
        externalRef,
        action: 'adopt',
        workflowId: handle.workflowId,
        runId:
          'firstExecutionRunId' in handle && typeof handle.firstExecutionRunId === 'string'
            ? handle.firstExecutionRunId
            : null,
        started: true,
        statusUrl: statusUrl(externalRef),
      });
    },
  );

  api.get(
    '/tenants/:externalRef/rotations/:slot',
    { config: { permission: 'tenants.read' }, schema: rotationRunDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const slot = slotOf(request.params);
      // A plain rotation and an adoption both run under rotate:<ref>:<slot>; null: none ever ran.
      return sendData(reply, 200, { run: await describeRun(deps.client, rotationWorkflowId(externalRef, slot)) });
    },
  );

  api.post(
    '/tenants/:externalRef/rotations/:slot/:decision',
    { config: { permission: 'runs.decide' }, schema: rotationDecisionDoc },
    async (request, reply) => {
      const { decision } = request.params as { decision: string };
      const run = { kind: 'rotation', externalRef: refOf(request.params), slot: slotOf(request.params) } as const;
      const decided = await decideForRun(deps.decisions, request, run, decision, request.body);
      if (decision === 'cancel') {
        const { workflowId, stage } = decided.data;
        return sendData(reply, 200, { workflowId, stage });
      }
      return sendData(reply, 200, asBefore(decided));
    },
  );

  api.get(
    '/rotation-schedules',
    { config: { permission: 'tenants.read' }, schema: listSchedulesDoc },
    async (_request, reply) => sendData(reply, 200, await listRotationSchedules(deps.client)),
  );

  api.post(
    '/rotation-schedules',
    { config: { permission: 'fleet.manage' }, schema: scheduleDoc },
    async (request, reply) => {
      const { every, jitter, fleet, ...input } = (request.body ?? {}) as Record<string, unknown>;
      const problems = [
        ...(typeof every === 'string' && SCHEDULE_EVERY.test(every)
          ? []
          : ['every: must be a duration like 12h or 30d']),
        ...(jitter === undefined || (typeof jitter === 'string' && SCHEDULE_EVERY.test(jitter))
          ? []
          : ['jitter: must be a duration like 6h']),
        ...(fleet === undefined || typeof fleet === 'boolean' ? [] : ['fleet: must be true or false']),
      ];
      if (problems.length) throw invalidInput(new InvalidInputError(problems));
      const times = { every: every as string, jitter: jitter as string | undefined };
      if (fleet !== true && input.adopt !== undefined)
        throw new InvalidInputError(['adopt: a schedule adopts for the fleet (fleet: true)']);
      const parsed =
        fleet === true ? parseInput(rotateFleetInputSchema, input) : parseInput(rotateTenantKeyInputSchema, input);
      // Every run the schedule starts would fail on a deployer that cannot run: refuse the schedule.
      assertDeployerReady(parsed, deps.deployers);
      if (fleet === true)
        return sendData(reply, 200, await scheduleFleetRotation(deps.client, input as never, times, deps.taskQueue));
      return sendData(
        reply,
        200,
        await scheduleTenantRotation(deps.client, input as never, times, deps.taskQueue, deps.pool),
      );
    },
  );

  api.post(
    '/rotation-schedules/:scheduleId/:command',
    { config: { permission: 'fleet.manage' }, schema: scheduleCommandDoc },
    async (request, reply) => {
      const { scheduleId } = request.params as { scheduleId: string };
      const command = pathCommand(request.params, SCHEDULE_COMMANDS);
      // Only rotation schedules: the drift and top-up schedules have their own routes.
      if (!/^rotation(-fleet)?:/.test(scheduleId))
        throw new GatewayError(404, GatewayErrorCode.SCHEDULE_NOT_FOUND, `No rotation schedule ${scheduleId}.`);
      await controlSchedule(deps.client, scheduleId, command, `${command} by ${callerOf(request).name}`);
      return sendData(reply, 200, { scheduleId, command });
    },
  );
}

function slotOf(params: unknown): string {
  const parsed = slotSchema.safeParse((params as { slot?: unknown }).slot);
  if (!parsed.success)
    throw new GatewayError(
      400,
      GatewayErrorCode.INVALID_INPUT,
      `slot: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      {
        fields: ['slot'],
      },
    );
  return parsed.data;
}

const slotParams = { ...externalRefParam, slot: slotSchema };
const scheduleTimes = {
  every: z.string().regex(SCHEDULE_EVERY).describe('How often, e.g. 12h or 30d.'),
  jitter: z.string().regex(SCHEDULE_EVERY).optional().describe('Random delay up to this, e.g. 6h.'),
};

const adoptDoc = doc({
  summary: "Start adopting an imported tenant's unmanaged keys (rotate them into managed ones)",
  params: externalRefParam,
  body: adoptTenantKeysInputSchema.omit({ externalRef: true }),
  bodyOptional: true,
  answers: {
    202: { description: 'Started; poll the status URL.', data: anyObject },
    404: 'Unknown tenant (TENANT_NOT_FOUND).',
    409:
      'The tenant is closing or closed (TENANT_CLOSED) or not active (TENANT_NOT_ACTIVE), or a rotation of the ' +
      'slot is running (ROTATION_CONFLICT).',
    422: 'The deployer is not configured on this gateway (DEPLOYER_NOT_CONFIGURED).',
  },
});

const rotationRunDoc = doc({
  summary: "The latest rotation run of a tenant's slot, with its result (what rotate-key --wait polls)",
  params: slotParams,
  answers: {
    200: {
      description: 'The run (null when none).',
      data: { type: 'object', required: ['run'], properties: { run: { type: ['object', 'null'] } } },
    },
    400: 'The external ref or slot breaks its rule (INVALID_INPUT).',
  },
});

const rotationDecisionDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: "Decide for a slot's waiting rotation: revoke-anyway, abort, retry-key-create (`{ reason }`), or cancel",
  description: "The run's Update validator is the one judge: a decision that does not apply now is a 409 naming why.",
  params: {
    ...slotParams,
    decision: { type: 'string', enum: ['revoke-anyway', 'abort', 'retry-key-create', 'cancel'] },
  },
  body: { ...decisionBody(), required: [], description: '`{ reason }` for an Update; cancel takes no field.' },
  bodyOptional: true,
  answers: {
    200: { description: "Sent: the run's answer (cancel: the stage it was cancelled at).", data: anyObject },
    404: 'No rotation of this slot (RUN_NOT_FOUND), or no such decision (ROUTE_NOT_FOUND).',
    409: 'The run refuses the decision now (DECISION_NOT_APPLICABLE).',
  },
});

const listSchedulesDoc = doc({
  summary: 'Rotation schedules (per tenant and the fleet)',
  answers: { 200: { description: 'The schedules.', data: anyArray } },
});

const scheduleDoc = doc({
  summary: "Create or update a rotation schedule: a tenant's slot, or the fleet (`fleet: true`)",
  description: "`every` is named, never defaulted; the rotation input is the same as a one-off rotation's.",
  body: {
    anyOf: [
      rotateTenantKeyInputSchema.extend({ ...scheduleTimes, fleet: z.literal(false).optional() }),
      // A fleet run's cursor and totals are its continuation's, never a caller's: not documented as a field.
      rotateFleetInputSchema.omit({ after: true, totals: true }).extend({ ...scheduleTimes, fleet: z.literal(true) }),
    ].map((schema) => fromZod(schema)),
  },
  answers: {
    200: { description: 'The schedule.', data: anyObject },
    404: 'Unknown tenant (TENANT_NOT_FOUND).',
    409: 'The tenant is closing or closed (TENANT_CLOSED).',
    422: 'The deployer is not configured on this gateway (DEPLOYER_NOT_CONFIGURED).',
  },
});

const scheduleCommandDoc = doc({
  summary: 'Pause, unpause, delete or run a rotation schedule now',
  params: {
    scheduleId: { type: 'string', pattern: '^rotation(-fleet)?:' },
    command: { type: 'string', enum: ['pause', 'unpause', 'delete', 'run-now'] },
  },
  answers: {
    200: { description: 'Done.', data: anyObject },
    404: 'No such schedule (SCHEDULE_NOT_FOUND) or command (ROUTE_NOT_FOUND).',
  },
});
