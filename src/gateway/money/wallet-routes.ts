import type { FastifyInstance } from 'fastify';
import { compareWallet } from '../../client/money/transfer-ledger.js';
import type { Pool } from '../../client/records.js';
import { findTenantRecord } from '../../client/tenant-records.js';
import { type PlatformClient } from '../../platform/index.js';
import { GatewayError, GatewayErrorCode, tenantNotFound, sendData } from '../http/errors.js';
import { anyObject, doc, externalRefParam } from '../http/api-docs.js';
import { refOf } from '../http/request-input.js';

/**
 * A tenant's wallet on the platform compared with our ledger (`tenantctl wallet`): a read, so
 * `tenants.read`. The platform is asked with the parent key this gateway holds (read-only); a caller
 * never needs it.
 */
export async function walletRoutes(
  api: FastifyInstance,
  deps: { pool: Pool; platform: PlatformClient | undefined },
): Promise<void> {
  api.get(
    '/tenants/:externalRef/wallet',
    { config: { permission: 'tenants.read' }, schema: walletDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const tenant = await findTenantRecord(deps.pool, externalRef);
      if (!tenant) throw tenantNotFound();
      if (!tenant.subaccountId)
        throw new GatewayError(
          409,
          GatewayErrorCode.TENANT_NOT_PROVISIONED,
          `Tenant ${externalRef} has no sub-account yet: there is no wallet to read.`,
        );
      if (!deps.platform)
        throw new GatewayError(
          503,
          GatewayErrorCode.PLATFORM_NOT_CONFIGURED,
          'This gateway has no PLATFORM_BASE_URL / parent key to read the wallet with.',
        );
      return sendData(reply, 200, await compareWallet({ pool: deps.pool, platform: deps.platform }, externalRef));
    },
  );
}

const walletDoc = doc({
  summary: "The tenant's wallet on the platform compared with our ledger",
  description: 'The platform is asked with the parent key this gateway holds (read-only).',
  params: externalRefParam,
  answers: {
    200: { description: 'The wallet and the ledger side by side.', data: anyObject },
    404: 'Unknown tenant (TENANT_NOT_FOUND).',
    409: 'The tenant has no sub-account yet (TENANT_NOT_PROVISIONED).',
    502: 'The platform refused or did not answer (PLATFORM_FAILED).',
    503: 'This gateway has no platform to ask (PLATFORM_NOT_CONFIGURED).',
  },
});
