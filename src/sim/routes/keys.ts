import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { getOwnedSubaccount } from '../auth.js';
import { sendData } from '../envelope.js';
import { SimError, SimErrorCode } from '../errors.js';
import { hashToken, newToken } from '../ids.js';
import { listResponse } from '../paging.js';
import type { SimRuntime } from '../runtime.js';
import { addApiKey, countActiveKeys, keysOfOwner, type ApiKeyRecord } from '../state.js';
import { parseBody, requiredText } from '../validation.js';
import { apiKeyView } from '../views.js';
import { params, parentOf } from './common.js';

const createSchema = z.object({ name: requiredText(100) });

function keyNotFound(): SimError {
  return new SimError(404, SimErrorCode.ApiKeyNotFound, 'API key not found.');
}

function limitReached(who: string, limit: number): SimError {
  return new SimError(
    409,
    SimErrorCode.ApiKeyLimitReached,
    `The ${who} already has ${limit} active keys (the limit); revoke an unused key first.`,
  );
}

/**
 * Tenant keys (`svsk_`) and the parent's platform keys (`svpk_`). The token exists only in the create response;
 * state keeps its SHA-256. Key creation does not honour Idempotency-Key, because replaying it would mean keeping
 * the plaintext token.
 */
export function registerKeyRoutes(app: FastifyInstance, sim: SimRuntime): void {
  const view = (key: ApiKeyRecord) => apiKeyView(key, sim.choices);
  const keysOf = (parentId: string, subaccountId: string | null) => keysOfOwner(sim.state, parentId, subaccountId);

  const create = (parentId: string, subaccountId: string | null, name: string) => {
    const token = newToken(subaccountId === null ? 'svpk_' : 'svsk_');
    const key = addApiKey(sim.state, {
      kind: subaccountId === null ? 'platform' : 'tenant',
      parentId,
      subaccountId,
      name,
      tokenHash: hashToken(token),
      createdAt: sim.clock.now(),
    });
    return { ...view(key), token };
  };

  const revoke = (key: ApiKeyRecord | undefined) => {
    if (!key) throw keyNotFound();
    // Revoking a revoked key is a successful no-op that keeps the first revocation time.
    if (key.status === 'active') {
      key.status = 'revoked';
      key.revokedAt = sim.clock.now();
    }
    return view(key);
  };

  app.get('/subaccounts/:subaccountId/api-keys', (request, reply) => {
    const parentId = parentOf(sim, request);
    const tenant = getOwnedSubaccount(sim.state, parentId, params(request).subaccountId ?? '');
    sendData(reply, 200, listResponse(request, sim.choices, keysOf(parentId, tenant.id), view));
  });

  app.post('/subaccounts/:subaccountId/api-keys/create', (request, reply) => {
    const parentId = parentOf(sim, request);
    const tenant = getOwnedSubaccount(sim.state, parentId, params(request).subaccountId ?? '');
    const body = parseBody(createSchema, request.body);
    const limit = sim.seed.tenantActiveKeyLimit;
    if (countActiveKeys(sim.state, parentId, tenant.id) >= limit) throw limitReached('sub-account', limit);
    sendData(reply, sim.choices.createStatus, create(parentId, tenant.id, body.name));
  });

  app.post('/subaccounts/:subaccountId/api-keys/:keyId/revoke', (request, reply) => {
    const parentId = parentOf(sim, request);
    const { subaccountId = '', keyId = '' } = params(request);
    const tenant = getOwnedSubaccount(sim.state, parentId, subaccountId);
    const key = sim.state.apiKeys.get(keyId);
    sendData(reply, 200, revoke(key?.subaccountId === tenant.id ? key : undefined));
  });

  app.get('/platform/api-keys', (request, reply) => {
    const parentId = parentOf(sim, request);
    sendData(reply, 200, listResponse(request, sim.choices, keysOf(parentId, null), view));
  });

  app.post('/platform/api-keys/create', (request, reply) => {
    const parentId = parentOf(sim, request);
    const body = parseBody(createSchema, request.body);
    const limit = sim.state.parents.get(parentId)?.activeKeyLimit ?? 0;
    if (countActiveKeys(sim.state, parentId, null) >= limit) throw limitReached('parent', limit);
    sendData(reply, sim.choices.createStatus, create(parentId, null, body.name));
  });

  app.post('/platform/api-keys/:keyId/revoke', (request, reply) => {
    const parentId = parentOf(sim, request);
    const key = sim.state.apiKeys.get(params(request).keyId ?? '');
    sendData(reply, 200, revoke(key?.parentId === parentId && key.kind === 'platform' ? key : undefined));
  });
}
