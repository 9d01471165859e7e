import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import {
  PARENT_KEY_DECISIONS,
  scheduleParentKeyRotation,
  showParentKeys,
  startParentKeyRotation,
} from '../client/parent-key.js';
import { describeRun } from '../client/run-status.js';
import { DecisionRefusedError, sendDecision } from '../client/send-decision.js';
import type { Pool } from '../db/pool.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID } from '../domain/ids.js';
import { checkDecisionBy } from '../domain/operator-decisions.js';
import { InvalidInputError } from '../domain/tenant-input.js';
import { actorOf } from './access.js';
import { GatewayError, GatewayErrorCode, sendData } from './errors.js';
import { invalidInput } from './tenant-routes.js';
import { badField, bodyOf, refuseUnknown } from './request-input.js';

/**
 * The parent's own platform key (`tenantctl parent-key show|rotate|schedule|decide`):
 * - `GET /v1/parent-key` (tenants.read): the keys in our records and which one each live process uses: record
 *   ids, platform key ids, fingerprints and process ids, never a token;
 * - `GET /v1/parent-key/rotation` (tenants.read): `{ run }`, the latest rotation run (what `--wait` polls);
 * - `POST /v1/parent-key/rotate` `{ emergency, reason?, options? }` (parent.key): starts the rotation or joins the
 *   running one (202);
 * - `POST /v1/parent-key/schedule` `{ every }` (parent.key): creates or updates its Temporal Schedule;
 * - `POST /v1/parent-key/decision` `{ decision, reason }` (parent.key): an Update to the running rotation; the
 *   run's refusal is a 409 naming why, no run a 404.
 * `parent-key import` stays local: it needs SECRETS_KEYS and the database, and the token on stdin.
 * Who acts is the bearer's name.
 */
export interface ParentKeyRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
}

export function registerParentKeyRoutes(app: FastifyInstance, deps: ParentKeyRoutesDeps): void {
  void app.register(async (api) => {
    api.get('/v1/parent-key', { config: { permission: 'tenants.read' } }, async (_request, reply) =>
      sendData(reply, 200, await showParentKeys(deps.pool)),
    );

    api.get('/v1/parent-key/rotation', { config: { permission: 'tenants.read' } }, async (_request, reply) =>
      sendData(reply, 200, { run: await describeRun(deps.client, PARENT_KEY_ROTATION_WORKFLOW_ID) }),
    );

    api.post('/v1/parent-key/rotate', { config: { permission: 'parent.key' } }, async (request, reply) => {
      const body = bodyOf(request.body);
      const operator = actorOf(request, body['operator'], 'operator');
      // Said every time: an emergency rotation skips the quiet gate, and an empty body starts nothing.
      if (typeof body['emergency'] !== 'boolean')
        throw badField('emergency', 'is required: true after a leak (no quiet gate), else false');
      const handle = await answered(() =>
        startParentKeyRotation(deps.client, { ...body, operator }, { taskQueue: deps.taskQueue }),
      );
      return sendData(reply, 202, { workflowId: handle.workflowId, started: handle.started });
    });

    api.post('/v1/parent-key/schedule', { config: { permission: 'parent.key' } }, async (request, reply) => {
      const { operator, every, ...rest } = bodyOf(request.body);
      actorOf(request, operator, 'operator');
      refuseUnknown(rest);
      if (typeof every !== 'string') throw badField('every', 'is required: a duration like 30d');
      return sendData(
        reply,
        200,
        await answered(() => scheduleParentKeyRotation(deps.client, {}, every, deps.taskQueue)),
      );
    });

    api.post('/v1/parent-key/decision', { config: { permission: 'parent.key' } }, async (request, reply) => {
      const { decision, operator, reason, ...rest } = bodyOf(request.body);
      refuseUnknown(rest);
      const update =
        typeof decision === 'string' && Object.hasOwn(PARENT_KEY_DECISIONS, decision)
          ? PARENT_KEY_DECISIONS[decision as keyof typeof PARENT_KEY_DECISIONS]
          : undefined;
      if (!update) throw badField('decision', `must be one of ${Object.keys(PARENT_KEY_DECISIONS).join(', ')}`);
      const by = checkDecisionBy({ operator: actorOf(request, operator, 'operator'), reason });
      if (!by.ok) throw invalidInput(new InvalidInputError(by.problems));
      const answer = await answered(() => sendDecision(deps.client, PARENT_KEY_ROTATION_WORKFLOW_ID, update, by.value));
      return sendData(reply, 200, { workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID, decision, ...answer });
    });
  });
}

async function answered<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof InvalidInputError) throw invalidInput(error);
    if (error instanceof DecisionRefusedError) {
      if (error.code === 'WORKFLOW_NOT_FOUND')
        throw new GatewayError(404, GatewayErrorCode.RUN_NOT_FOUND, `${error.message}.`);
      // The run's own refusal (its Update validator): nothing reached its history.
      throw new GatewayError(409, GatewayErrorCode.DECISION_NOT_APPLICABLE, `${error.message} [${error.code}].`);
    }
    throw error;
  }
}
