import type { FastifyInstance } from 'fastify';
import { keySlotRoutes, type KeySlotRoutesDeps } from './key-slot-routes.js';
import { rotationRoutes, type RotationRoutesDeps } from './rotation-routes.js';

/**
 * The keys area, under `/v1`: a tenant's key slots (`/tenants/:externalRef/keys…`), its rotations and adoption
 * (`/tenants/:externalRef/rotations…`, `…/adopt`) and the rotation schedules (`/rotation-schedules…`).
 */
export type KeysAreaDeps = KeySlotRoutesDeps & RotationRoutesDeps;

export async function keysArea(app: FastifyInstance, deps: KeysAreaDeps): Promise<void> {
  await keySlotRoutes(app, deps);
  await rotationRoutes(app, deps);
}
