import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { describeKeyRun, listSlotKeys, startKeyIssue, startKeyRevoke } from '../../client/keys/key-slots.js';
import { revealOrRequest } from '../../client/keys/reveal-key.js';
import type { Vault } from '../../secrets/vault.js';
import type { Pool } from '../../client/records.js';
import { namedSlotSchema } from '../../domain/key-slot-input.js';
import { requireTenant } from '../../client/tenant-records.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { actorOf, callerOf, requirePermission } from '../http/access.js';
import { GatewayError, GatewayErrorCode, sendData } from '../http/errors.js';
import { accepted, bodyOf, refOf } from '../http/request-input.js';
import { asBefore, decideForRun, type RunDecisionDeps } from '../http/run-decisions.js';
import { issueTenantKeyInputSchema, revokeTenantKeyInputSchema } from '../../domain/key-slot-input.js';
import {
  anyObject,
  decisionBody,
  doc,
  externalRefParam,
  fromZod,
  objectOf,
  reasonField,
  withoutFields,
} from '../http/api-docs.js';

/**
 * Keys per workload and environment for signup backends: list a tenant's slots, issue a slot's key, revoke it
 * through the quiet gate (or with force and a reason: the keys.force permission, operators), and decide for an issue
 * waiting at the platform's active-key limit (`POST /v1/tenants/:ref/keys/:slot/issue/retry-key-create|abort`
 * `{ "reason" }`, keys.manage: whoever may issue a slot's key may retry or give up its issue; the run's Update
 * validator is the one judge of whether the decision applies now, 409 naming why when it does not). The slot is in
 * the path; the rest of the input in the JSON body, validated whole before the tenant is looked up and anything
 * starts. Who asked, and who decided, is the bearer's identity.
 */
export interface KeySlotRoutesDeps {
  pool: Pool;
  client: Client;
  /** Opens sealed tokens for a reveal: only the server holds the master keys. */
  vault: Vault;
  /** APPROVAL_POLICY / APPROVAL_TTL of this server: whether a reveal needs a second operator first. */
  revealApproval: { gated: boolean; ttlMs: number };
  taskQueue: string;
  publicUrl: string | undefined;
  decisions: RunDecisionDeps;
}

function slotOf(value: unknown): string {
  const parsed = namedSlotSchema.safeParse(value);
  if (!parsed.success) throw new InvalidInputError([`slot: ${parsed.error.issues[0]?.message ?? 'invalid'}`]);
  return parsed.data;
}

export async function keySlotRoutes(api: FastifyInstance, deps: KeySlotRoutesDeps): Promise<void> {
  const keysUrl = (externalRef: string) => `${deps.publicUrl ?? ''}/v1/tenants/${encodeURIComponent(externalRef)}/keys`;

  api.get(
    '/tenants/:externalRef/keys',
    { config: { permission: 'tenants.read' }, schema: listKeysDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const query = request.query as { slot?: unknown };
      const slot = query.slot === undefined ? undefined : slotOf(query.slot);
      const keys = (await listSlotKeys(deps.pool, externalRef, deps.client)).filter(
        (k) => slot === undefined || k.slot === slot,
      );
      return sendData(reply, 200, { externalRef, keys });
    },
  );

  // Where a slot's latest issue or revoke run stands (its result once it completed): what a
  // caller polls after the 202, as `tenantctl key issue|revoke --wait` does.
  api.get(
    '/tenants/:externalRef/keys/:slot/:action',
    { config: { permission: 'tenants.read' }, schema: keyRunDoc },
    async (request, reply) => {
      const { slot: rawSlot, action } = request.params as { slot: string; action: string };
      if (action !== 'issue' && action !== 'revoke')
        throw new GatewayError(404, GatewayErrorCode.ROUTE_NOT_FOUND, 'No such action; use issue or revoke.');
      const externalRef = refOf(request.params);
      const slot = slotOf(rawSlot);
      await requireTenant(deps.pool, externalRef);
      const run = await describeKeyRun(deps.client, externalRef, slot, action);
      return sendData(reply, 200, { externalRef, slot, action, run });
    },
  );

  // The one way to read a token back: the caller is the operator (the token says who), the policy
  // is this server's. 200 with the token once (never cached), or 202 with the approval request.
  api.post(
    '/tenants/:externalRef/keys/:slot/reveal',
    { config: { permission: 'keys.reveal' }, schema: revealDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const { slot } = request.params as { slot: string };
      const body = bodyOf(request.body);
      const unknown = Object.keys(body).filter((key) => key !== 'reason');
      if (unknown.length)
        throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, `${unknown[0]}: is not a known field`, {
          fields: unknown,
        });
      const answer = await revealOrRequest(
        { pool: deps.pool, vault: deps.vault },
        { externalRef, slot, operator: callerOf(request).name, reason: body['reason'] as string },
        deps.revealApproval,
      );
      void reply.header('Cache-Control', 'no-store');
      return sendData(reply, answer.status === 'revealed' ? 200 : 202, answer);
    },
  );

  // An operator decision for a slot's key issue waiting at the active-key limit (deprecated alias).
  api.post(
    '/tenants/:externalRef/keys/:slot/issue/:decision',
    { config: { permission: 'keys.manage' }, schema: issueDecisionDoc },
    async (request, reply) => {
      const { slot: rawSlot, decision } = request.params as { slot: string; decision: string };
      const externalRef = refOf(request.params);
      const slot = slotOf(rawSlot);
      const run = { kind: 'key-issue', externalRef, slot } as const;
      const decided = await decideForRun(deps.decisions, request, run, decision, request.body);
      return sendData(reply, 200, { externalRef, slot, ...asBefore(decided) });
    },
  );

  api.post(
    '/tenants/:externalRef/keys/:slot/:action',
    { config: { permission: 'keys.manage' }, schema: keyActionDoc },
    async (request, reply) => {
      const { slot, action } = request.params as { slot: string; action: string };
      if (action !== 'issue' && action !== 'revoke')
        throw new GatewayError(404, GatewayErrorCode.ROUTE_NOT_FOUND, 'No such action; use issue or revoke.');
      const externalRef = refOf(request.params);
      const body = bodyOf(request.body);
      if (action === 'revoke' && body['force'] === true) requirePermission(request, 'keys.force');
      const input = { ...body, externalRef, slot, operator: actorOf(request, body['operator'], 'operator') };
      const handle =
        action === 'issue'
          ? await startKeyIssue({ client: deps.client, pool: deps.pool }, input, { taskQueue: deps.taskQueue })
          : await startKeyRevoke({ client: deps.client, pool: deps.pool }, input, { taskQueue: deps.taskQueue });
      return accepted(reply, keysUrl(externalRef), {
        externalRef,
        slot,
        action,
        workflowId: handle.workflowId,
        started: handle.started,
        statusUrl: keysUrl(externalRef),
      });
    },
  );
}

const slotParams = { ...externalRefParam, slot: namedSlotSchema };
const inPath = ['externalRef', 'slot'];
const unknownTenant = 'Unknown tenant (TENANT_NOT_FOUND).';

const listKeysDoc = doc({
  summary: "A tenant's keys by slot and generation (ids and fingerprints, never a secret), with running issues",
  params: externalRefParam,
  query: { slot: namedSlotSchema },
  answers: {
    200: {
      description: '`{ externalRef, keys }`.',
      data: { type: 'object', required: ['externalRef', 'keys'] },
    },
    400: 'The external ref or slot breaks its rule (INVALID_INPUT).',
    404: unknownTenant,
  },
});

const keyRunDoc = doc({
  summary: "The latest issue or revoke run of a tenant's slot, with its result (what key issue|revoke --wait polls)",
  params: { ...slotParams, action: { type: 'string', enum: ['issue', 'revoke'] } },
  answers: {
    200: { description: '`{ externalRef, slot, action, run }`.', data: anyObject },
    404: `${unknownTenant} Or no such action (ROUTE_NOT_FOUND).`,
  },
});

const revealDoc = doc({
  summary: "Reveal a slot's current key once, or ask a second operator first (APPROVAL_POLICY)",
  description: 'The gateway alone opens the vault. Answers carry Cache-Control: no-store.',
  params: slotParams,
  body: { ...objectOf({ reason: reasonField }), additionalProperties: false },
  answers: {
    200: { description: 'Revealed: the token, once.', data: anyObject },
    202: { description: 'Awaiting a second operator: the approval request.', data: anyObject },
    404: `${unknownTenant} Or no active key in the slot (KEY_NOT_FOUND).`,
  },
});

const issueDecisionDoc = doc({
  deprecatedFor: 'POST /v1/runs/{run}/decisions/{decision}',
  summary: "Decide for a slot's key issue waiting at the platform's active-key limit: retry-key-create or abort",
  description: "The run's Update validator is the one judge: a decision that does not apply now is a 409 naming why.",
  params: { ...slotParams, decision: { type: 'string', enum: ['retry-key-create', 'abort'] } },
  body: decisionBody(),
  answers: {
    200: { description: "Sent: the run's answer.", data: anyObject },
    404: 'No issue run waiting (RUN_NOT_FOUND), no such tenant (TENANT_NOT_FOUND) or decision (ROUTE_NOT_FOUND).',
    409: 'The run refuses the decision now (DECISION_NOT_APPLICABLE).',
  },
});

const keyActionDoc = doc({
  summary: "Issue a slot's key (issueTenantKey), or revoke it through the quiet gate (revokeTenantKeySlot)",
  description:
    'issue takes `{ options? }`, revoke `{ force?, reason?, options? }`; `force` skips the quiet gate and needs the ' +
    '`keys.force` permission and a reason. `operator` is taken from the bearer token.',
  params: { ...slotParams, action: { type: 'string', enum: ['issue', 'revoke'] } },
  body: {
    anyOf: [
      withoutFields(fromZod(issueTenantKeyInputSchema), inPath),
      withoutFields(fromZod(revokeTenantKeyInputSchema), inPath),
    ],
  },
  bodyOptional: true,
  answers: {
    202: { description: "Started or joined; Location is the tenant's keys.", data: anyObject },
    404: `${unknownTenant} Or no active key in the slot (KEY_NOT_FOUND), or no such action (ROUTE_NOT_FOUND).`,
    409: 'issue: the tenant is closing or closed (TENANT_CLOSED) or not active (TENANT_NOT_ACTIVE).',
  },
});
