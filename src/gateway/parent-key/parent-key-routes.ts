import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import {
  checkPlatformKeyId,
  identifyParentKey,
  listParentPlatformKeys,
  PARENT_KEY_DECISIONS,
  scheduleParentKeyRotation,
  showParentKeys,
  startParentKeyRotation,
} from '../../client/parent-key/parent-key.js';
import { describeRun } from '../../client/run-status.js';
import type { Pool } from '../../client/records.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID } from '../../domain/ids.js';
import { checkDecisionBy } from '../../domain/operator-decisions.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { type PlatformClient } from '../../platform/index.js';
import { actorOf } from '../http/access.js';
import { GatewayError, GatewayErrorCode, invalidInput, sendData } from '../http/errors.js';
import { badField, bodyOf, refuseUnknown } from '../http/request-input.js';
import { decideForRun, type RunDecisionDeps } from '../http/run-decisions.js';
import { rotateParentKeyInputSchema } from '../../domain/key-slot-input.js';
import { actorField, anyObject, decisionBody, doc, fromZod } from '../http/api-docs.js';

/**
 * The parent's own platform key (`tenantctl parent-key show|rotate|schedule|decide`):
 * - `GET /v1/parent-key` (tenants.read): the keys in our records and which one each live process uses: record
 *   ids, platform key ids, fingerprints and process ids, never a token; and `rotation`, the rotation in progress
 *   (stage, its wait: what for, since, the decisions that apply; the processes not yet switched) or null;
 * - `GET /v1/parent-key/platform-keys[?record=<rowId>]` (parent.key): the parent's active platform keys, each
 *   compared with the record whose platform id is unknown (recorded, likely, possible, unlikely, and why);
 * - `POST /v1/parent-key/identify` `{ keyId, reason, record?, force? }` (parent.key): records which platform key
 *   our record is, audited under the bearer's name; wakes a rotation waiting for it. Refused (409) when the
 *   records or the key's last use say otherwise, 404 when the key is not an active key of the parent;
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
  /** The platform with the parent key this gateway holds (absent: platform-keys and identify answer 503). */
  platform?: PlatformClient | undefined;
  decisions: RunDecisionDeps;
}

export async function parentKeyRoutes(api: FastifyInstance, deps: ParentKeyRoutesDeps): Promise<void> {
  api.get('', { config: { permission: 'tenants.read' }, schema: showDoc }, async (_request, reply) =>
    sendData(reply, 200, await showParentKeys(deps.pool, undefined, deps.client)),
  );

  const platformOf = () => {
    if (!deps.platform)
      throw new GatewayError(
        503,
        GatewayErrorCode.PLATFORM_NOT_CONFIGURED,
        'This gateway has no PLATFORM_BASE_URL / parent key to list the platform keys with.',
      );
    return deps.platform;
  };
  const recordOf = (value: unknown): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !/^[1-9][0-9]{0,18}$/.test(value))
      throw badField('record', 'must be the id of one of our parent key records (parent-key show), digits');
    return value;
  };

  api.get(
    '/platform-keys',
    { config: { permission: 'parent.key' }, schema: platformKeysDoc },
    async (request, reply) => {
      const { record, ...rest } = (request.query ?? {}) as Record<string, unknown>;
      refuseUnknown(rest);
      const rowId = recordOf(record);
      const view = await listParentPlatformKeys(
        { pool: deps.pool, platform: platformOf(), client: deps.client },
        rowId ? { rowId } : {},
      );
      return sendData(reply, 200, view);
    },
  );

  api.post('/identify', { config: { permission: 'parent.key' }, schema: identifyDoc }, async (request, reply) => {
    const { keyId, record, reason, force, operator, ...rest } = bodyOf(request.body);
    refuseUnknown(rest);
    checkPlatformKeyId(keyId);
    if (force !== undefined && typeof force !== 'boolean') throw badField('force', 'must be true or false');
    const rowId = recordOf(record);
    const by = checkDecisionBy({ operator: actorOf(request, operator, 'operator'), reason });
    if (!by.ok) throw invalidInput(new InvalidInputError(by.problems));
    const named = await identifyParentKey(
      { pool: deps.pool, platform: platformOf(), client: deps.client },
      {
        keyId: keyId as string,
        ...(rowId ? { rowId } : {}),
        operator: by.value.operator,
        reason: by.value.reason,
        force: force === true,
      },
    );
    return sendData(reply, 200, named);
  });

  api.get('/rotation', { config: { permission: 'tenants.read' }, schema: rotationRunDoc }, async (_request, reply) =>
    sendData(reply, 200, { run: await describeRun(deps.client, PARENT_KEY_ROTATION_WORKFLOW_ID) }),
  );

  api.post('/rotate', { config: { permission: 'parent.key' }, schema: rotateDoc }, async (request, reply) => {
    const body = bodyOf(request.body);
    const operator = actorOf(request, body['operator'], 'operator');
    // Said every time: an emergency rotation skips the quiet gate, and an empty body starts nothing.
    if (typeof body['emergency'] !== 'boolean')
      throw badField('emergency', 'is required: true after a leak (no quiet gate), else false');
    const handle = await startParentKeyRotation(deps.client, { ...body, operator }, { taskQueue: deps.taskQueue });
    return sendData(reply, 202, { workflowId: handle.workflowId, started: handle.started });
  });

  api.post('/schedule', { config: { permission: 'parent.key' }, schema: scheduleDoc }, async (request, reply) => {
    const { operator, every, ...rest } = bodyOf(request.body);
    actorOf(request, operator, 'operator');
    refuseUnknown(rest);
    if (typeof every !== 'string') throw badField('every', 'is required: a duration like 30d');
    return sendData(reply, 200, await scheduleParentKeyRotation(deps.client, {}, every, deps.taskQueue));
  });

  api.post('/decision', { config: { permission: 'parent.key' }, schema: decisionDoc }, async (request, reply) => {
    const { decision, ...body } = bodyOf(request.body, ['decision', 'operator', 'reason']);
    if (typeof decision !== 'string' || !Object.hasOwn(PARENT_KEY_DECISIONS, decision))
      throw badField('decision', `must be one of ${Object.keys(PARENT_KEY_DECISIONS).join(', ')}`);
    const run = { kind: 'parent-key-rotation' } as const;
    const decided = await decideForRun(deps.decisions, request, run, decision, body);
    return sendData(reply, 200, decided.data);
  });
}

const recordField = { type: 'string', pattern: '^[1-9][0-9]{0,18}$', description: 'One of our parent key records.' };
const platformAnswers = {
  502: 'The platform refused or did not answer (PLATFORM_FAILED).',
  503: 'This gateway has no platform to ask (PLATFORM_NOT_CONFIGURED).',
};

const showDoc = doc({
  summary: 'The parent keys in our records, which one each live process uses, and the rotation in progress',
  description: 'Record ids, platform key ids, fingerprints and process ids; never a token.',
  answers: { 200: { description: 'The keys and `rotation` (or null).', data: anyObject } },
});

const platformKeysDoc = doc({
  summary: "The parent's active platform keys, each compared with a record whose platform id is unknown",
  query: { record: recordField },
  answers: { 200: { description: 'The keys and how likely each is the record.', data: anyObject }, ...platformAnswers },
});

const identifyDoc = doc({
  summary: 'Record which platform key one of our parent key records is (wakes a rotation waiting for it)',
  body: decisionBody({ keyId: { type: 'string' }, record: recordField, force: { type: 'boolean' } }, [
    'keyId',
    'reason',
  ]),
  answers: {
    200: { description: 'Recorded.', data: anyObject },
    404: 'Not an active key of the parent (KEY_NOT_FOUND).',
    409: "The records or the key's last use say otherwise (DECISION_NOT_APPLICABLE).",
    ...platformAnswers,
  },
});

const rotationRunDoc = doc({
  summary: 'The latest parent key rotation run, with its result (what --wait polls)',
  answers: {
    200: {
      description: '`{ run }` (null when none).',
      data: { type: 'object', required: ['run'], properties: { run: { type: ['object', 'null'] } } },
    },
  },
});

const rotateParentBody = fromZod(rotateParentKeyInputSchema) as { properties: object };
const rotateDoc = doc({
  summary: 'Start (or join) the rotation of the parent key (`emergency` said every time)',
  body: {
    ...rotateParentBody,
    required: ['emergency'],
    properties: { ...rotateParentBody.properties, operator: actorField },
  },
  answers: {
    202: {
      description: 'Started or joined.',
      data: {
        type: 'object',
        required: ['workflowId', 'started'],
        properties: { workflowId: { type: 'string' }, started: { type: 'boolean' } },
      },
    },
  },
});

const scheduleDoc = doc({
  summary: "Create or update the parent key rotation's Schedule",
  body: {
    type: 'object',
    required: ['every'],
    additionalProperties: false,
    properties: { every: { type: 'string', description: 'A duration like 30d.' }, operator: actorField },
  },
  answers: { 200: { description: 'The schedule.', data: anyObject } },
});

const decisionDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: 'Send an operator decision to the running parent key rotation',
  body: decisionBody({ decision: { type: 'string', enum: Object.keys(PARENT_KEY_DECISIONS) } }, ['decision', 'reason']),
  answers: {
    200: { description: "Sent: the run's answer.", data: anyObject },
    404: 'No rotation running (RUN_NOT_FOUND).',
    409: 'The run refuses the decision now (DECISION_NOT_APPLICABLE).',
  },
});
