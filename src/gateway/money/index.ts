import type { FastifyInstance } from 'fastify';
import { fundingFleetRoutes } from './funding-fleet-routes.js';
import { fundingRoutes } from './funding-routes.js';
import { transferRoutes, type TransferRoutesDeps } from './transfer-routes.js';
import { walletRoutes } from './wallet-routes.js';

/**
 * The money area, under `/v1`: a tenant's transfers, funding policy and wallet (`/tenants/:externalRef/transfers…`,
 * `…/funding-policy`, `…/wallet`) and the fleet's funding (`/funding/parent…`, `/funding/schedule…`).
 */
export type MoneyAreaDeps = TransferRoutesDeps &
  Parameters<typeof fundingRoutes>[1] &
  Parameters<typeof walletRoutes>[1] &
  Parameters<typeof fundingFleetRoutes>[1];

export async function moneyArea(app: FastifyInstance, deps: MoneyAreaDeps): Promise<void> {
  await transferRoutes(app, deps);
  await fundingRoutes(app, deps);
  await walletRoutes(app, deps);
  await fundingFleetRoutes(app, deps);
}
