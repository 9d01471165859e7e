import type { FastifyInstance } from 'fastify';
import { requirePersonal } from '../auth.js';
import { sendData } from '../envelope.js';
import type { SimRuntime } from '../runtime.js';
import { callerOf } from './common.js';

/**
 * Representatives of contract rule 4 (machine credentials denied on personal profile, sessions, payment methods,
 * unrelated billing). Personal tokens get a placeholder payload; `svsk_` and `svpk_` get 403.
 */
const HUMAN_ONLY_PATHS = ['/auth/profile', '/auth/sessions', '/billing/payment-methods', '/billing/subscription'];

export function registerMachineDeniedRoutes(app: FastifyInstance, sim: SimRuntime): void {
  for (const path of HUMAN_ONLY_PATHS) {
    app.get(path, (request, reply) => {
      const caller = callerOf(sim, request);
      requirePersonal(caller, `GET ${path}`);
      sendData(reply, 200, { parentId: caller.parentId, simulated: true });
    });
  }
}
