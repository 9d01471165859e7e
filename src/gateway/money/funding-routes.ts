import type { FastifyInstance } from 'fastify';
import { clearFundingPolicy, setFundingPolicy, showFundingPolicy } from '../../client/money/funding-policy.js';
import type { Pool } from '../../client/records.js';
import { actorOf } from '../http/access.js';
import { sendData } from '../http/errors.js';
import { anyObject, doc, externalRefParam } from '../http/api-docs.js';
import { fundingPolicySchema } from '../../domain/funding-policy-input.js';
import { refOf } from '../http/request-input.js';

/**
 * A tenant's auto top-up policy for signup backends: `PUT` (the whole policy: below, to, maxPerDay,
 * optional maxPerMonth, micro-USD strings), `GET` (with what its caps hold today), `DELETE`.
 */
export async function fundingRoutes(
  api: FastifyInstance,
  deps: { pool: Pool; maxTransferMicroUsd?: string | undefined },
): Promise<void> {
  api.put(
    '/tenants/:externalRef/funding-policy',
    { config: { permission: 'funds.policy' }, schema: setPolicyDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const fields = (request.body ?? {}) as Record<string, unknown>;
      const body = { ...fields, updatedBy: actorOf(request, fields['updatedBy'], 'updatedBy') };
      return sendData(
        reply,
        200,
        await setFundingPolicy(deps.pool, externalRef, body, { maxTransferMicroUsd: deps.maxTransferMicroUsd }),
      );
    },
  );
  api.get(
    '/tenants/:externalRef/funding-policy',
    { config: { permission: 'tenants.read' }, schema: showPolicyDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(reply, 200, await showFundingPolicy(deps.pool, externalRef));
    },
  );
  api.delete(
    '/tenants/:externalRef/funding-policy',
    { config: { permission: 'funds.policy' }, schema: clearPolicyDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(
        reply,
        200,
        await clearFundingPolicy(deps.pool, externalRef, actorOf(request, undefined, 'updatedBy')),
      );
    },
  );
}

const unknownTenant = 'Unknown tenant (TENANT_NOT_FOUND).';

const setPolicyDoc = doc({
  summary: "Set the tenant's auto top-up policy and spend caps (micro-USD strings)",
  description: '`updatedBy` is taken from the bearer token (it may only repeat its name).',
  params: externalRefParam,
  body: fundingPolicySchema,
  answers: {
    200: { description: 'The policy and what its caps hold today.', data: anyObject },
    404: unknownTenant,
  },
});

const showPolicyDoc = doc({
  summary: "The tenant's auto top-up policy and what its caps hold today",
  params: externalRefParam,
  answers: { 200: { description: 'The policy (null when none).', data: anyObject }, 404: unknownTenant },
});

const clearPolicyDoc = doc({
  summary: "Clear the tenant's auto top-up policy",
  params: externalRefParam,
  answers: { 200: { description: 'Whether a policy was cleared.', data: anyObject }, 404: unknownTenant },
});
