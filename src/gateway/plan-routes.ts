import type { FastifyInstance } from 'fastify';
import {
  createPlan,
  listPlans,
  PlanExistsError,
  PlanNotFoundError,
  PlanVersionConflictError,
  showPlan,
  updatePlan,
} from '../client/plans.js';
import type { Pool } from '../db/pool.js';
import { createPlanInputSchema, planNameSchema, updatePlanInputSchema } from '../domain/plans.js';
import { InvalidInputError } from '../domain/tenant-input.js';
import { callerOf } from './access.js';
import { anyArray, anyObject, doc } from './api-docs.js';
import { GatewayError, GatewayErrorCode, sendData } from './errors.js';
import { invalidInput } from './tenant-routes.js';

/**
 * Plans (issue 33): `POST /v1/plans` (version 1 of a new plan), `GET /v1/plans`, `GET /v1/plans/:name`
 * (`?version=N`; absent: the latest) and `POST /v1/plans/:name/versions` (the next version, the whole new
 * body, `expectVersion` to refuse it unless the latest is that one). Reading needs `tenants.read`, writing
 * `plans.manage` (admins). Who made a version is the bearer's name, never a body field.
 */
export function registerPlanRoutes(
  app: FastifyInstance,
  deps: { pool: Pool; maxTransferMicroUsd?: string | undefined },
): void {
  void app.register(async (api) => {
    const answer = async <T>(work: () => Promise<T>) => {
      try {
        return await work();
      } catch (error) {
        if (error instanceof InvalidInputError) throw invalidInput(error);
        if (error instanceof PlanNotFoundError)
          throw new GatewayError(404, GatewayErrorCode.PLAN_NOT_FOUND, `${error.message}.`);
        if (error instanceof PlanExistsError)
          throw new GatewayError(409, GatewayErrorCode.PLAN_EXISTS, `${error.message}.`, { fields: ['name'] });
        if (error instanceof PlanVersionConflictError)
          throw new GatewayError(409, GatewayErrorCode.PLAN_VERSION_CONFLICT, `${error.message}.`, {
            fields: ['expectVersion'],
          });
        throw error;
      }
    };
    const writeOptions = (request: Parameters<typeof callerOf>[0]) => ({
      actor: callerOf(request).name,
      maxTransferMicroUsd: deps.maxTransferMicroUsd,
    });

    api.post('/v1/plans', { config: { permission: 'plans.manage' }, schema: createDoc }, async (request, reply) =>
      sendData(reply, 201, await answer(() => createPlan(deps.pool, request.body ?? {}, writeOptions(request)))),
    );
    api.get('/v1/plans', { config: { permission: 'tenants.read' }, schema: listDoc }, async (_request, reply) =>
      sendData(reply, 200, await listPlans(deps.pool)),
    );
    api.get('/v1/plans/:name', { config: { permission: 'tenants.read' }, schema: showDoc }, async (request, reply) => {
      const { name } = request.params as { name: string };
      const { version } = request.query as { version?: string };
      return sendData(reply, 200, await answer(() => showPlan(deps.pool, name, version)));
    });
    api.post(
      '/v1/plans/:name/versions',
      { config: { permission: 'plans.manage' }, schema: updateDoc },
      async (request, reply) => {
        const { name } = request.params as { name: string };
        return sendData(
          reply,
          201,
          await answer(() => updatePlan(deps.pool, name, request.body ?? {}, writeOptions(request))),
        );
      },
    );
  });
}

const nameParam = { name: planNameSchema };
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
    'Who made it is the bearer token. Amounts sent in one transfer stay within TRANSFER_MAX_MICRO_USD.',
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
    409: 'The latest version is not `expectVersion`, or another update made the next version first (PLAN_VERSION_CONFLICT).',
  },
});
