import type { FastifyInstance } from 'fastify';
import { clearFundingPolicy, setFundingPolicy, showFundingPolicy } from '../client/funding-policy.js';
import type { Pool } from '../db/pool.js';
import { TenantNotFoundError } from '../db/tenants-store.js';
import { InvalidInputError } from '../domain/tenant-input.js';
import { requireBearer, type TokenSet } from './auth.js';
import { sendData } from './errors.js';
import { invalidInput, refOf, tenantNotFound } from './tenant-routes.js';
import { API_REQUESTER } from './transfer-routes.js';

/**
 * A tenant's auto top-up policy for signup backends: `PUT` (the whole policy: below, to, maxPerDay,
 * optional maxPerMonth, micro-USD strings), `GET` (with what its caps hold today), `DELETE`.
 */
export function registerFundingRoutes(app: FastifyInstance, deps: { pool: Pool; tokens: TokenSet }): void {
  void app.register(async (api) => {
    api.addHook('preHandler', requireBearer(deps.tokens));
    const answer = async <T>(work: () => Promise<T>) => {
      try {
        return await work();
      } catch (error) {
        if (error instanceof TenantNotFoundError) throw tenantNotFound();
        if (error instanceof InvalidInputError) throw invalidInput(error);
        throw error;
      }
    };
    api.put('/v1/tenants/:externalRef/funding-policy', async (request, reply) => {
      const externalRef = refOf(request.params);
      const body = { updatedBy: API_REQUESTER, ...((request.body ?? {}) as Record<string, unknown>) };
      return sendData(reply, 200, await answer(() => setFundingPolicy(deps.pool, externalRef, body)));
    });
    api.get('/v1/tenants/:externalRef/funding-policy', async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(reply, 200, await answer(() => showFundingPolicy(deps.pool, externalRef)));
    });
    api.delete('/v1/tenants/:externalRef/funding-policy', async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(reply, 200, await answer(() => clearFundingPolicy(deps.pool, externalRef, API_REQUESTER)));
    });
  });
}
