import type { FastifyInstance } from 'fastify';
import { declareParentFunded } from '../../client/money/parent-funded.js';
import { checkDecisionBy } from '../../domain/operator-decisions.js';
import type { DecidingRun } from '../../domain/run-ids.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { idempotencyKeySchema } from '../../domain/top-up-input.js';
import { actorOf } from '../http/access.js';
import { sendData } from '../http/errors.js';
import { badField, bodyOf, refOf } from '../http/request-input.js';
import { anyObject, decisionBody, doc, externalRefParam, fromZod } from '../http/api-docs.js';
import {
  asBefore,
  decideForRun,
  decidingRunOfParam,
  decisionPermission,
  RUN_DECISIONS,
  type RunDecisionDeps,
} from '../http/run-decisions.js';

/**
 * The runs area: the one decision surface, `POST /v1/runs/:run/decisions/:decision` (its table and `decideForRun`
 * in ../http/run-decisions.ts, which the keys, plans and parent-key areas call too), and the operator decisions'
 * older shapes, its deprecated aliases, that answer as before: each names its run the old way and calls `decideForRun`.
 * - `POST /v1/tenants/:ref/decisions/resolve-transfer` `{ outcome, reason, close?, purpose?, key? }`;
 * - `POST /v1/tenants/:ref/decisions/parent-funded` `{ reason, key? }` (its onboarding, or that top-up);
 * - `POST /v1/tenants/:ref/close/cancel` `{ reason }`: undo a delayed close inside its window.
 * `POST /v1/parent/funded` `{ reason }` is no run's decision but the parent-wide state (every waiting top-up is
 * told): it stays as it is.
 */
export type DecisionRoutesDeps = RunDecisionDeps;

export async function decisionRoutes(api: FastifyInstance, deps: DecisionRoutesDeps): Promise<void> {
  api.post(
    '/runs/:run/decisions/:decision',
    { config: { permission: decisionPermission }, schema: runDecisionDoc },
    async (request, reply) => {
      const params = request.params as { run: string; decision: string };
      const decided = await decideForRun(deps, request, decidingRunOfParam(params.run), params.decision, request.body);
      return sendData(reply, decided.status, decided.data);
    },
  );
  api.post(
    '/tenants/:externalRef/decisions/resolve-transfer',
    { config: { permission: 'runs.decide' }, schema: resolveTransferDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const {
        close: rawClose,
        key: rawKey,
        ...body
      } = bodyOf(request.body, ['outcome', 'reason', 'close', 'purpose', 'key', 'operator']);
      const close = flagOf(rawClose, 'close');
      const key = rawKey === undefined ? undefined : topUpKeyOf(rawKey);
      if (!close && body['purpose'] !== undefined)
        throw badField('purpose', 'only with close (an onboarding or a top-up has one transfer)');
      if (close && key !== undefined) throw badField('key', 'not with close (name the transfer with purpose)');
      const run: DecidingRun = close
        ? { kind: 'close', externalRef }
        : key !== undefined
          ? { kind: 'top-up', externalRef, key }
          : { kind: 'onboarding', externalRef };
      const decided = await decideForRun(deps, request, run, 'resolve-transfer', body);
      return sendData(reply, decided.status, asBefore(decided));
    },
  );

  api.post(
    '/tenants/:externalRef/decisions/parent-funded',
    { config: { permission: 'runs.decide' }, schema: parentFundedDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const { key, ...body } = bodyOf(request.body, ['reason', 'key', 'operator']);
      const run: DecidingRun =
        key === undefined ? { kind: 'onboarding', externalRef } : { kind: 'top-up', externalRef, key: topUpKeyOf(key) };
      const decided = await decideForRun(deps, request, run, 'parent-funded', body);
      return sendData(reply, decided.status, asBefore(decided));
    },
  );

  api.post(
    '/parent/funded',
    { config: { permission: 'runs.decide' }, schema: parentWideFundedDoc },
    async (request, reply) => {
      const body = bodyOf(request.body, ['reason', 'operator']);
      const by = checkDecisionBy({
        operator: actorOf(request, body['operator'], 'operator'),
        reason: body['reason'],
      });
      if (!by.ok) throw new InvalidInputError(by.problems);
      return sendData(reply, 200, await declareParentFunded(deps, by.value));
    },
  );

  api.post(
    '/tenants/:externalRef/close/cancel',
    { config: { permission: 'runs.decide' }, schema: cancelCloseDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const decided = await decideForRun(deps, request, { kind: 'close', externalRef }, 'cancel-close', request.body);
      const { workflowId: _id, decision: _name, ...answer } = decided.data;
      return sendData(reply, 200, { externalRef, cancelled: true, ...answer });
    },
  );
}

function flagOf(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw badField(field, 'must be true or false');
  return value;
}

function topUpKeyOf(value: unknown): string {
  const parsed = idempotencyKeySchema.safeParse(value);
  if (!parsed.success) throw badField('key', parsed.error.issues[0]?.message ?? 'invalid');
  return parsed.data;
}

const refused =
  "The run refuses the decision now (DECISION_NOT_APPLICABLE: its Update validator's reason); nothing reached it.";
const noRun = 'No run under this business key (RUN_NOT_FOUND), or no such tenant (TENANT_NOT_FOUND).';
const topUpKey = { ...fromZod(idempotencyKeySchema), description: "A top-up's Idempotency-Key: decide for that run." };

const resolveTransferDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: 'Say whether an ambiguous transfer was applied (resolveTransfer)',
  description:
    "For the tenant's onboarding, a top-up (`key`) or its close (`close: true`, the transfer named by `purpose`). " +
    "With the server's APPROVAL_POLICY gating resolveTransfer, the request is written (202) for a second operator " +
    "and nothing is sent to the run; otherwise the Update is sent (200 with the run's answer).",
  params: externalRefParam,
  body: decisionBody(
    {
      outcome: { type: 'string', enum: ['applied', 'not-applied'] },
      close: { type: 'boolean' },
      purpose: { type: 'string', description: 'With close only: the transfer to resolve.' },
      key: topUpKey,
    },
    ['outcome', 'reason'],
  ),
  answers: {
    200: { description: "Sent: the run's answer.", data: anyObject },
    202: { description: 'Awaiting a second operator (`status: awaiting_approval`, `approvalId`).', data: anyObject },
    404: noRun,
    409: refused,
  },
});

const parentFundedDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: "Tell the tenant's onboarding, or one top-up (`key`), that the parent is funded again",
  params: externalRefParam,
  body: decisionBody({ key: topUpKey }),
  answers: { 200: { description: "Sent: the run's answer.", data: anyObject }, 404: noRun, 409: refused },
});

const parentWideFundedDoc = doc({
  summary: 'Declare the parent funded again: every top-up waiting for the parent is told',
  body: decisionBody(),
  answers: { 200: { description: 'The parent-wide state and the runs told.', data: anyObject } },
});

const cancelCloseDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: 'Cancel a delayed close inside its window',
  params: externalRefParam,
  body: decisionBody(),
  answers: {
    200: { description: 'Cancelled: the tenant stays suspended.', data: anyObject },
    404: noRun,
    409: refused,
  },
});

const decisionsTable = Object.entries(RUN_DECISIONS)
  .map(([name, kind]) => `- ${name} (\`${kind.example}\`): ${Object.keys(kind.decisions).join(', ')}`)
  .join('\n');

const runDecisionDoc = doc({
  summary: 'Decide for a waiting run (the one decision surface)',
  description:
    'The run is named by its workflow id, as its status and its wait show it; the decisions each kind of run ' +
    `takes:\n${decisionsTable}\n\n` +
    "Every decision takes `reason` (recorded) except a rotation's `cancel`; `resolve-transfer` also takes " +
    '`outcome`, and for a close `purpose` (the transfer to resolve; default the onboarding funding). With the ' +
    "server's APPROVAL_POLICY gating resolveTransfer, the request is written (202) for a second operator and " +
    'nothing is sent to the run.',
  params: {
    run: { type: 'string', description: 'The workflow id of the run that waits, e.g. onboard:acme.' },
    decision: { type: 'string', description: 'One of the decisions its kind takes (above).' },
  },
  body: decisionBody(
    {
      outcome: { type: 'string', enum: ['applied', 'not-applied'], description: 'resolve-transfer only.' },
      purpose: { type: 'string', description: 'resolve-transfer of a close only: the transfer to resolve.' },
    },
    [],
  ),
  bodyOptional: true,
  answers: {
    200: { description: "Sent: `{ workflowId, decision }` and the run's answer.", data: anyObject },
    202: { description: 'Awaiting a second operator (`status: awaiting_approval`, `approvalId`).', data: anyObject },
    404:
      'No such run kind or decision (RUN_NOT_FOUND, ROUTE_NOT_FOUND), no run waits under this id (RUN_NOT_FOUND), ' +
      'or no such tenant (TENANT_NOT_FOUND).',
    409:
      "The run refuses the decision now (DECISION_NOT_APPLICABLE: its Update validator's reason); nothing " +
      'reached it.',
  },
});
