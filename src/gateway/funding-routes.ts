import type { FastifyInstance } from 'fastify';
import { clearFundingPolicy, setFundingPolicy, showFundingPolicy } from '../client/funding-policy.js';
import type { Pool } from '../db/pool.js';
import { TenantNotFoundError } from '../db/tenants-store.js';
import { TopUpNotAllowedError } from '../client/top-up-precheck.js';
import { InvalidInputError } from '../domain/tenant-input.js';
import { actorOf } from './access.js';
import { GatewayError, GatewayErrorCode, sendData } from './errors.js';
import { invalidInput, refOf, tenantNotFound } from './tenant-routes.js';

/**
 * A tenant's auto top-up policy for signup backends: `PUT` (the whole policy: below, to, maxPerDay,
 * optional maxPerMonth, micro-USD strings), `GET` (with what its caps hold today), `DELETE`.
 */
export function registerFundingRoutes(
  app: FastifyInstance,
  deps: { pool: Pool; maxTransferMicroUsd?: string | undefined },
): void {
  void app.register(async (api) => {
    const answer = async <T>(work: () => Promise<T>) => {
      try {
        return await work();
      } catch (error) {
        if (error instanceof TenantNotFoundError) throw tenantNotFound();
        if (error instanceof TopUpNotAllowedError)
          throw new GatewayError(409, GatewayErrorCode[error.code], `${error.message}.`);
        if (error instanceof InvalidInputError) throw invalidInput(error);
        throw error;
      }
    };
    api.put(
      '/v1/tenants/:externalRef/funding-policy',
      { config: { permission: 'funds.policy' } },
      async (request, reply) => {
        const externalRef = refOf(request.params);
        const fields = (request.body ?? {}) as Record<string, unknown>;
        const body = { ...fields, updatedBy: actorOf(request, fields['updatedBy'], 'updatedBy') };
        return sendData(
          reply,
          200,
          await answer(() =>
            setFundingPolicy(deps.pool, externalRef, body, { maxTransferMicroUsd: deps.maxTransferMicroUsd }),
          ),
        );
      },
    );
    api.get(
      '/v1/tenants/:externalRef/funding-policy',
      { config: { permission: 'tenants.read' } },
      async (request, reply) => {
        const externalRef = refOf(request.params);
        return sendData(reply, 200, await answer(() => showFundingPolicy(deps.pool, externalRef)));
      },
    );
    api.delete(
      '/v1/tenants/:externalRef/funding-policy',
      { config: { permission: 'funds.policy' } },
      async (request, reply) => {
        const externalRef = refOf(request.params);
        return sendData(
          reply,
          200,
          await answer(() => clearFundingPolicy(deps.pool, externalRef, actorOf(request, undefined, 'updatedBy'))),
        );
      },
    );
  });
}
