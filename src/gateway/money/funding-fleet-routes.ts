import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { controlAutoTopUpSchedule, scheduleAutoTopUp } from '../../client/money/auto-top-up-schedule.js';
import { setParentCap, showParentFunding } from '../../client/money/funding-policy.js';
import { SCHEDULE_EVERY } from '../../client/schedule-every.js';
import type { AutoTopUpSweepInput } from '../../domain/funding-policy-input.js';
import type { Pool } from '../../client/records.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { actorOf } from '../http/access.js';
import { GatewayError, GatewayErrorCode, invalidInput, sendData } from '../http/errors.js';
import { bodyOf, pathCommand } from '../http/request-input.js';
import { autoTopUpSweepInputSchema, parentCapSchema } from '../../domain/funding-policy-input.js';
import { anyObject, doc, fromZod } from '../http/api-docs.js';

/**
 * Funding across the fleet, for operators (`tenantctl funding parent|schedule` are clients of these):
 * - `GET /v1/funding/parent` (tenants.read): the parent's daily cap, what top-ups hold today, and
 *   the insufficient-balance state;
 * - `PUT /v1/funding/parent/cap` (fleet.manage) `{ "maxPerDay": "<micro-USD>" | null }`, audited
 *   under the token's name;
 * - the auto top-up sweep's Schedule: `GET /v1/funding/schedule`, `POST /v1/funding/schedule`
 *   `{ "every", "pageSize"? }`, `POST /v1/funding/schedule/run-now|delete`.
 */
const SCHEDULE_COMMANDS = ['run-now', 'delete'] as const;

export async function fundingFleetRoutes(
  api: FastifyInstance,
  deps: { pool: Pool; client: Client; taskQueue: string },
): Promise<void> {
  api.get('/funding/parent', { config: { permission: 'tenants.read' }, schema: parentDoc }, async (_request, reply) =>
    sendData(reply, 200, await showParentFunding(deps.pool)),
  );

  api.put('/funding/parent/cap', { config: { permission: 'fleet.manage' }, schema: capDoc }, async (request, reply) => {
    const fields = bodyOf(request.body);
    const body = { ...fields, updatedBy: actorOf(request, fields['updatedBy'], 'updatedBy') };
    return sendData(reply, 200, await setParentCap(deps.pool, body));
  });

  api.get(
    '/funding/schedule',
    { config: { permission: 'tenants.read' }, schema: showScheduleDoc },
    async (_request, reply) =>
      sendData(reply, 200, await scheduleCall(() => controlAutoTopUpSchedule(deps.client, 'describe'))),
  );

  api.post(
    '/funding/schedule',
    { config: { permission: 'fleet.manage' }, schema: scheduleDoc },
    async (request, reply) => {
      const { every, ...input } = bodyOf(request.body);
      // Named, not defaulted: an empty body makes nothing.
      if (typeof every !== 'string' || !SCHEDULE_EVERY.test(every))
        throw invalidInput(new InvalidInputError(['every: must be a duration like 15m or 1h']));
      return sendData(
        reply,
        200,
        await scheduleAutoTopUp(deps.client, input as AutoTopUpSweepInput, every, deps.taskQueue),
      );
    },
  );

  api.post(
    '/funding/schedule/:command',
    { config: { permission: 'fleet.manage' }, schema: scheduleCommandDoc },
    async (request, reply) => {
      const command = pathCommand(request.params, SCHEDULE_COMMANDS);
      await scheduleCall(() => controlAutoTopUpSchedule(deps.client, command));
      return sendData(reply, 200, { command });
    },
  );
}

async function scheduleCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof Error && error.cause instanceof ScheduleNotFoundError)
      throw new GatewayError(404, GatewayErrorCode.SCHEDULE_NOT_FOUND, `${error.message}.`);
    throw error;
  }
}

const parentDoc = doc({
  summary: "The parent's daily cap, what top-ups hold today, and the insufficient-balance state",
  answers: { 200: { description: 'The parent funding view.', data: anyObject } },
});

const capDoc = doc({
  summary: "Set or clear (null) the parent's daily cap over every top-up of the fleet",
  description: '`updatedBy` is taken from the bearer token (it may only repeat its name).',
  body: parentCapSchema,
  answers: { 200: { description: 'The cap as set.', data: anyObject } },
});

const showScheduleDoc = doc({
  summary: "The auto top-up sweep's Schedule",
  answers: { 200: { description: 'The schedule.', data: anyObject }, 404: 'No schedule (SCHEDULE_NOT_FOUND).' },
});

// The sweep's cursor and totals are its continuation's, never a caller's: not documented as fields.
const sweep = fromZod(autoTopUpSweepInputSchema.omit({ after: true, totals: true })) as { properties: object };
const scheduleDoc = doc({
  summary: "Create or update the auto top-up sweep's Schedule (`every` named, never defaulted)",
  body: {
    ...sweep,
    required: ['every'],
    properties: { every: { type: 'string', pattern: SCHEDULE_EVERY.source }, ...sweep.properties },
  },
  answers: { 200: { description: 'The schedule.', data: anyObject } },
});

const scheduleCommandDoc = doc({
  summary: "Run the auto top-up sweep's Schedule now, or delete it",
  params: { command: { type: 'string', enum: [...SCHEDULE_COMMANDS] } },
  answers: {
    200: { description: 'Done.', data: anyObject },
    404: 'No schedule (SCHEDULE_NOT_FOUND), or no such command (ROUTE_NOT_FOUND).',
  },
});
