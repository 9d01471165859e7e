import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { getOwnedSubaccount } from '../auth.js';
import { sendData } from '../envelope.js';
import { SimError, SimErrorCode } from '../errors.js';
import { newId } from '../ids.js';
import { listResponse } from '../paging.js';
import type { SimRuntime } from '../runtime.js';
import { liveProjectsOf, nextSeq, type SubaccountRecord, type SubaccountStatus } from '../state.js';
import { optionalHeaderKey, parseBody, requireHeaderKey, requiredText } from '../validation.js';
import { subaccountView } from '../views.js';
import { params, parentOf, pathOf } from './common.js';

const createSchema = z.object({ name: requiredText(200), externalRef: requiredText(200) });

/** Tenants: list, create (idempotent, key required), inspect, and the lifecycle actions (key optional). */
export function registerSubaccountRoutes(app: FastifyInstance, sim: SimRuntime): void {
  const view = (tenant: SubaccountRecord) => subaccountView(tenant, sim.choices, sim.seed.tenantActiveKeyLimit);

  app.get('/subaccounts', (request, reply) => {
    const parentId = parentOf(sim, request);
    const tenants = [...sim.state.subaccounts.values()].filter((t) => t.parentId === parentId && t.status !== 'closed');
    sendData(reply, 200, listResponse(request, sim.choices, tenants, view));
  });

  app.post('/subaccounts/create', (request, reply) => {
    const parentId = parentOf(sim, request);
    const key = requireHeaderKey(request);
    const body = parseBody(createSchema, request.body);
    const call = { parentId, route: 'POST /subaccounts/create', key, request: { path: pathOf(request), body } };
    sim.idempotency.run(reply, call, () => {
      const taken = [...sim.state.subaccounts.values()].some(
        (t) => t.parentId === parentId && t.status !== 'closed' && t.externalRef === body.externalRef,
      );
      if (sim.choices.uniqueExternalRef && taken) {
        throw new SimError(409, 'EXTERNAL_REF_TAKEN', 'externalRef: a live sub-account already uses this reference.');
      }
      const now = sim.clock.now();
      const tenant: SubaccountRecord = {
        seq: nextSeq(sim.state),
        id: newId('sub_'),
        parentId,
        name: body.name,
        externalRef: body.externalRef,
        status: 'operating',
        balance: 0n,
        createdAt: now,
        updatedAt: now,
      };
      sim.state.subaccounts.set(tenant.id, tenant);
      return { status: sim.choices.createStatus, data: view(tenant) };
    });
  });

  app.get('/subaccounts/:subaccountId', (request, reply) => {
    const parentId = parentOf(sim, request);
    sendData(reply, 200, view(getOwnedSubaccount(sim.state, parentId, params(request).subaccountId ?? '')));
  });

  const lifecycle = (action: 'suspend' | 'resume' | 'close', next: SubaccountStatus) => {
    app.post(`/subaccounts/:subaccountId/${action}`, (request, reply) => {
      const parentId = parentOf(sim, request);
      const key = optionalHeaderKey(request);
      const route = `POST /subaccounts/:subaccountId/${action}`;
      // The tenant is looked up inside the action so that a replayed close still answers its original success.
      sim.idempotency.runMaybe(reply, { parentId, route, key, request: { path: pathOf(request) } }, () => {
        const tenant = getOwnedSubaccount(sim.state, parentId, params(request).subaccountId ?? '');
        if (
          action === 'close' &&
          sim.choices.closeRefusesWithResources &&
          liveProjectsOf(sim.state, tenant.id).length > 0
        ) {
          throw new SimError(
            409,
            SimErrorCode.SubaccountHasResources,
            'The sub-account still has projects; delete them before closing.',
          );
        }
        // Suspending a suspended tenant (or resuming an operating one) is a successful no-op.
        if (tenant.status !== next) {
          tenant.status = next;
          tenant.updatedAt = sim.clock.now();
        }
        return { status: 200, data: view(tenant) };
      });
    });
  };
  lifecycle('suspend', 'suspended');
  lifecycle('resume', 'operating');
  lifecycle('close', 'closed');
}
