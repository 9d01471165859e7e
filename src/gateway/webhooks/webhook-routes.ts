import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  createRegistryWebhook,
  deleteRegistryWebhook,
  listRegistryDeliveries,
  listRegistryWebhooks,
  replaceRegistryWebhook,
  updateRegistryWebhook,
  type WebhookManagementDeps,
} from '../../client/webhooks/webhook-management.js';
import type { Pool } from '../../client/records.js';
import { externalRefSchema, InvalidInputError } from '../../domain/tenant-input.js';
import { type PlatformClient } from '../../platform/index.js';
import type { Vault } from '../../secrets/vault.js';
import { actorOf, ownerScopeOf } from '../http/access.js';
import { GatewayError, GatewayErrorCode, invalidInput, sendData } from '../http/errors.js';
import { badField, bodyOf } from '../http/request-input.js';
import { createWebhookInputSchema, updateWebhookInputSchema } from '../../domain/webhook-input.js';
import { actorField, anyArray, anyObject, doc, fromZod, objectOf } from '../http/api-docs.js';

/**
 * Registry webhooks on a tenant's project (or the parent's own), received by this gateway (permission
 * `webhooks.manage`, list included: the list is the parent's wiring across every tenant and its own projects,
 * with the receiver URLs, which a backend's `tenants.read` does not cover):
 * - `POST /v1/webhooks` `{ projectId, externalRef?, label?, events? }` → 201 with the registration;
 * - `GET /v1/webhooks?externalRef=&includeDeleted=true`;
 * - `PATCH /v1/webhooks/:registrationId` `{ label?, events? }`; `POST …/rotate-secret` (replaces the webhook);
 *   `DELETE …`; `GET …/deliveries` (the platform's history beside our inbox's).
 * The platform calls use the parent's personal token (the contract's rule 6) and, to prove a project is the
 * tenant's, the parent's platform key: both held here, never by the caller. The signing secret is generated and
 * sealed here and is in no answer. The audited actor is the bearer's name.
 */
export interface WebhookRoutesDeps {
  pool: Pool;
  vault: Vault;
  /** GATEWAY_PUBLIC_URL: receiver URLs are built from it. */
  publicUrl: string | undefined;
  /** A platform client holding PLATFORM_PERSONAL_TOKEN (absent: the routes that call the platform answer 503). */
  platform: PlatformClient | undefined;
  /** A platform client holding the parent's key, to check a tenant's project (absent: not checked). */
  projectOwner: PlatformClient | undefined;
}

const REGISTRATION_ID = /^whr_[A-Za-z0-9]{8,64}$/;

export async function webhookRoutes(api: FastifyInstance, deps: WebhookRoutesDeps): Promise<void> {
  const managementOf = (request: FastifyRequest, operator: unknown): WebhookManagementDeps => {
    const name = actorOf(request, operator, 'operator');
    const owner = ownerScopeOf(request);
    const missing = [
      ...(deps.platform ? [] : ['PLATFORM_BASE_URL and PLATFORM_PERSONAL_TOKEN (sv_...)']),
      ...(deps.publicUrl ? [] : ['GATEWAY_PUBLIC_URL (receiver URLs are built from it)']),
    ];
    if (missing.length)
      throw new GatewayError(
        503,
        GatewayErrorCode.PLATFORM_NOT_CONFIGURED,
        `This gateway cannot manage registry webhooks: it needs ${missing.join(' and ')}.`,
      );
    return {
      pool: deps.pool,
      vault: deps.vault,
      platform: deps.platform!,
      publicUrl: deps.publicUrl!,
      ...(deps.projectOwner ? { projectOwner: deps.projectOwner } : {}),
      actor: `operator:${name}`,
      createdBy: name,
      // A registration belongs to whoever made it: others (but admins) are answered 404.
      ...(owner ? { ownerScope: owner } : {}),
    };
  };

  api.post('', { config: { permission: 'webhooks.manage' }, schema: createDoc }, async (request, reply) => {
    const { operator, ...body } = bodyOf(request.body);
    const management = managementOf(request, operator);
    const view = await createRegistryWebhook(management, {
      label: 'tenant-orchestrator',
      events: ['*'],
      ...(body as { projectId: string }),
    });
    return sendData(reply, 201, view);
  });

  api.get('', { config: { permission: 'webhooks.manage' }, schema: listDoc }, async (request, reply) => {
    const query = request.query as { externalRef?: string; includeDeleted?: string };
    const externalRef = query.externalRef === undefined ? undefined : externalRefSchema.safeParse(query.externalRef);
    if (externalRef && !externalRef.success) throw badField('externalRef', 'must be an external ref');
    if (query.includeDeleted !== undefined && !['true', 'false'].includes(query.includeDeleted))
      throw badField('includeDeleted', 'must be true or false');
    const owner = ownerScopeOf(request);
    const views = await listRegistryWebhooks(
      { pool: deps.pool, ...(owner ? { ownerScope: owner } : {}) },
      { ...(externalRef ? { externalRef: externalRef.data } : {}), includeDeleted: query.includeDeleted === 'true' },
    );
    return sendData(reply, 200, views);
  });

  api.patch(
    '/:registrationId',
    { config: { permission: 'webhooks.manage' }, schema: updateDoc },
    async (request, reply) => {
      const registrationId = registrationIdOf(request.params);
      const { operator, ...body } = bodyOf(request.body);
      if (body['label'] === undefined && body['events'] === undefined)
        throw badField('body', 'give label or events to change');
      const management = managementOf(request, operator);
      return sendData(reply, 200, await updateRegistryWebhook(management, { ...body, registrationId } as never));
    },
  );

  api.post(
    '/:registrationId/rotate-secret',
    { config: { permission: 'webhooks.manage' }, schema: rotateSecretDoc },
    async (request, reply) => {
      const registrationId = registrationIdOf(request.params);
      const management = managementOf(request, onlyOperator(request.body));
      return sendData(reply, 200, await replaceRegistryWebhook(management, { registrationId }));
    },
  );

  api.delete(
    '/:registrationId',
    { config: { permission: 'webhooks.manage' }, schema: deleteDoc },
    async (request, reply) => {
      const registrationId = registrationIdOf(request.params);
      const management = managementOf(request, onlyOperator(request.body));
      return sendData(reply, 200, await deleteRegistryWebhook(management, { registrationId }));
    },
  );

  // The platform's history is read with the parent's personal token: management, not a plain read.
  api.get(
    '/:registrationId/deliveries',
    { config: { permission: 'webhooks.manage' }, schema: deliveriesDoc },
    async (request, reply) => {
      const registrationId = registrationIdOf(request.params);
      const management = managementOf(request, undefined);
      return sendData(reply, 200, await listRegistryDeliveries(management, { registrationId }));
    },
  );
}

/** A body that may carry only `operator` (which may only repeat the bearer's name). */
function onlyOperator(raw: unknown): unknown {
  const { operator, ...rest } = bodyOf(raw);
  const unknown = Object.keys(rest);
  if (unknown.length)
    throw invalidInput(new InvalidInputError(unknown.map((field) => `${field}: is not a known field`)));
  return operator;
}

function registrationIdOf(params: unknown): string {
  const id = (params as { registrationId?: unknown }).registrationId;
  if (typeof id !== 'string' || !REGISTRATION_ID.test(id))
    throw badField('registrationId', 'must be a registration id (whr_...)');
  return id;
}

const registrationParam = { registrationId: { type: 'string', pattern: REGISTRATION_ID.source } };
const operatorOnly = { ...objectOf({ operator: actorField }, []), additionalProperties: false };
const registrationAnswers = {
  404: "No registration with this id that is the caller's (WEBHOOK_NOT_FOUND).",
  409: 'The registration is deleted, being created or being replaced (WEBHOOK_STATE_CONFLICT).',
  502: 'The platform refused or did not answer (PLATFORM_FAILED).',
  503: 'This gateway lacks what the platform call needs (PLATFORM_NOT_CONFIGURED).',
};
const withOperator = (schema: Record<string, unknown>) => ({
  ...schema,
  properties: { ...(schema['properties'] as object), operator: actorField },
});

const createDoc = doc({
  summary: "Register a registry webhook on a tenant's project (or the parent's own), received by this gateway",
  description: 'The signing secret is generated and sealed here and is in no answer. The creator owns it.',
  body: withOperator(fromZod(createWebhookInputSchema)),
  answers: {
    201: { description: 'The registration.', data: anyObject },
    404: 'No such tenant (TENANT_NOT_FOUND).',
    409: 'The tenant has no sub-account yet (TENANT_NOT_PROVISIONED).',
    502: registrationAnswers[502],
    503: registrationAnswers[503],
  },
});

const listDoc = doc({
  summary: "Webhook registrations (the caller's; an admin's: everyone's)",
  query: {
    externalRef: fromZod(createWebhookInputSchema.shape.externalRef.unwrap()),
    includeDeleted: { type: 'string', enum: ['true', 'false'] },
  },
  answers: {
    200: { description: 'The registrations.', data: anyArray },
    400: 'externalRef breaks its rule (INVALID_INPUT).',
  },
});

const updateDoc = doc({
  summary: "Change a registration's label or events",
  params: registrationParam,
  body: withOperator(fromZod(updateWebhookInputSchema.omit({ registrationId: true }))),
  answers: { 200: { description: 'The registration.', data: anyObject }, ...registrationAnswers },
});

const rotateSecretDoc = doc({
  summary: "Replace the registration's webhook with a new signing secret (the old one verifies for a grace period)",
  params: registrationParam,
  body: operatorOnly,
  bodyOptional: true,
  answers: { 200: { description: 'The registration.', data: anyObject }, ...registrationAnswers },
});

const deleteDoc = doc({
  summary: "Delete the registration's webhook on the platform",
  params: registrationParam,
  body: operatorOnly,
  bodyOptional: true,
  answers: { 200: { description: 'The registration.', data: anyObject }, ...registrationAnswers },
});

const deliveriesDoc = doc({
  summary: "The platform's delivery history of the registration beside our inbox's",
  params: registrationParam,
  answers: { 200: { description: 'The deliveries.', data: anyObject }, ...registrationAnswers },
});
