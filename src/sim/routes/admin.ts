import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { sendError } from '../envelope.js';
import { projectNotFound, SimErrorCode } from '../errors.js';
import { faultRulesSchema } from '../faults.js';
import { REGISTRY_EVENTS } from '../registry-delivery.js';
import type { SimRuntime } from '../runtime.js';
import { snapshotOf } from '../snapshot.js';
import { hashToken, newId } from '../ids.js';
import { addApiKey, nextSeq } from '../state.js';
import { parseBody } from '../validation.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export function isLoopbackAddress(address: string | undefined): boolean {
  return address !== undefined && (LOOPBACK.has(address) || /^(::ffff:)?127\./.test(address));
}

const eventSchema = z
  .object({
    projectId: z.string().min(1),
    event: z.enum(REGISTRY_EVENTS),
    image: z.string().min(1),
    tag: z.string().min(1),
  })
  .strict();
const balanceSchema = z
  .object({
    paidMicroUsd: z.string().regex(/^(0|[1-9][0-9]*)$/, 'must be a whole number of micro-USD as a string'),
    promoMicroUsd: z
      .string()
      .regex(/^(0|[1-9][0-9]*)$/, 'must be a whole number of micro-USD as a string')
      .optional(),
  })
  .strict();
const bulkSchema = z
  .object({
    parentId: z.string().min(1),
    count: z.number().int().min(1).max(100_000),
    /** null: tenants without an externalRef (as a console that never asked for one would leave them). */
    externalRefPrefix: z.string().min(1).max(100).nullable(),
  })
  .strict();
const platformKeySchema = z
  .object({
    name: z.string().min(1).max(100),
    token: z.string().regex(/^svpk_\S{8,}$/, 'must start with svpk_ and have 8+ more characters'),
  })
  .strict();
const advanceSchema = z
  .object({
    seconds: z
      .number()
      .min(0)
      .max(10 * 365 * 86_400),
  })
  .strict();

/**
 * Test and demo controls under /__sim, outside the API base. Answers are plain JSON (no envelope: this is not the
 * platform), errors use the envelope. Anyone not on loopback gets the same 404 as an unknown route.
 */
const trafficSchema = z.strictObject({ rateLimitPerSecond: z.number().int().positive().max(100_000).nullable() });

export function registerAdminRoutes(app: FastifyInstance, sim: SimRuntime): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!isLoopbackAddress(request.socket.remoteAddress)) {
      sendError(reply, 404, SimErrorCode.RouteNotFound, `No route for ${request.method} ${request.url.split('?')[0]}.`);
      return reply;
    }
    return undefined;
  });

  app.get('/__sim/state', (_request, reply) => {
    void reply.send(snapshotOf(sim));
  });

  app.post('/__sim/faults', (request, reply) => {
    const { rules } = parseBody(faultRulesSchema, request.body);
    sim.faults.setRules(rules);
    void reply.send({ rules: rules.length });
  });

  app.delete('/__sim/faults', (_request, reply) => {
    sim.faults.clear();
    void reply.send({ rules: 0 });
  });

  app.post('/__sim/registry/events', (request, reply) => {
    const body = parseBody(eventSchema, request.body);
    const project = sim.state.projects.get(body.projectId);
    if (!project || project.status !== 'active') throw projectNotFound();
    const deliveries = sim.delivery.emit(sim.state, body);
    void reply.code(202).send({ deliveries: deliveries.map((d) => ({ deliveryId: d.id, webhookId: d.webhookId })) });
  });

  // The parent buys credit (or a test sets the stage): sets the parent's balances outright.
  app.post('/__sim/parents/:parentId/balance', (request, reply) => {
    const { parentId } = request.params as { parentId: string };
    const body = parseBody(balanceSchema, request.body);
    const parent = sim.state.parents.get(parentId);
    if (!parent) {
      sendError(reply, 404, SimErrorCode.RouteNotFound, `No parent ${parentId}.`);
      return;
    }
    parent.paidBalance = BigInt(body.paidMicroUsd);
    if (body.promoMicroUsd !== undefined) parent.promoBalance = BigInt(body.promoMicroUsd);
    void reply.send({
      id: parentId,
      paidBalanceMicroUsd: parent.paidBalance.toString(),
      promoBalanceMicroUsd: parent.promoBalance.toString(),
    });
  });

  // Another service of the parent holds a platform key of its own (the parent's usual shape): an active key with a
  // token the caller chose, so the test can use it as that service would. Its id comes back; the token never does.
  app.post('/__sim/parents/:parentId/platform-keys', (request, reply) => {
    const { parentId } = request.params as { parentId: string };
    const body = parseBody(platformKeySchema, request.body);
    if (!sim.state.parents.has(parentId)) {
      sendError(reply, 404, SimErrorCode.RouteNotFound, `No parent ${parentId}.`);
      return;
    }
    if (sim.state.apiKeysByHash.has(hashToken(body.token))) {
      sendError(reply, 409, SimErrorCode.RouteNotFound, 'That token is already a key.');
      return;
    }
    const key = addApiKey(sim.state, {
      kind: 'platform',
      parentId,
      subaccountId: null,
      name: body.name,
      tokenHash: hashToken(body.token),
      createdAt: sim.clock.now(),
    });
    void reply.send({ id: key.id, name: key.name });
  });

  // A large fleet in one call (benchmarks, the lost-create-at-scale test): tenants `<prefix>-<n>`, operating;
  // with `externalRefPrefix: null`, tenants that carry no externalRef (the import test's mapping file).
  app.post('/__sim/subaccounts/bulk', (request, reply) => {
    const body = parseBody(bulkSchema, request.body);
    if (!sim.state.parents.has(body.parentId)) {
      sendError(reply, 404, SimErrorCode.RouteNotFound, `No parent ${body.parentId}.`);
      return;
    }
    const now = sim.clock.now();
    for (let i = 0; i < body.count; i += 1) {
      const tenant = {
        seq: nextSeq(sim.state),
        id: newId('sub_'),
        parentId: body.parentId,
        name: `Fleet ${i}`,
        externalRef: body.externalRefPrefix === null ? null : `${body.externalRefPrefix}-${i}`,
        status: 'operating' as const,
        balance: 0n,
        createdAt: now,
        updatedAt: now,
      };
      sim.state.subaccounts.set(tenant.id, tenant);
    }
    void reply.send({ created: body.count });
  });

  app.post('/__sim/clock/advance', (request, reply) => {
    const { seconds } = parseBody(advanceSchema, request.body);
    sim.clock.advance(seconds);
    void reply.send({ now: sim.clock.iso() });
  });

  // A measured phase begins: the traffic statistics start again, with this global rate limit (null: none).
  app.post('/__sim/traffic', (request, reply) => {
    const { rateLimitPerSecond } = parseBody(trafficSchema, request.body);
    sim.restartTraffic(rateLimitPerSecond);
    void reply.send({ rateLimitPerSecond });
  });

  app.post('/__sim/reset', (_request, reply) => {
    sim.reset();
    void reply.send({ reset: true, now: sim.clock.iso() });
  });
}
