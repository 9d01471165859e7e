import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { requirePersonal } from '../auth.js';
import { sendData } from '../envelope.js';
import { SimError, SimErrorCode } from '../errors.js';
import { newId } from '../ids.js';
import { listResponse } from '../paging.js';
import { REGISTRY_EVENTS } from '../registry-delivery.js';
import type { SimRuntime } from '../runtime.js';
import { nextSeq, type WebhookRecord } from '../state.js';
import { parseBody, requiredText } from '../validation.js';
import { deliveryView, webhookView } from '../views.js';
import { callerOf, contextOf, getProjectInContext, params } from './common.js';

const events = z
  .array(z.enum([...REGISTRY_EVENTS, '*'], { error: `must be one of ${[...REGISTRY_EVENTS, '*'].join(', ')}` }), {
    error: 'must be an array of event names',
  })
  .min(1, 'must name at least one event');
const secret = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(256);
const url = z.string({ error: 'must be a string' }).max(2048);

const createSchema = z.object({ label: requiredText(100), url, secret: secret.optional(), events });
const updateSchema = z
  .object({
    label: requiredText(100).optional(),
    url: url.optional(),
    secret: secret.nullable().optional(),
    events: events.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), 'must set at least one of label, url, secret, events');

function webhookNotFound(): SimError {
  return new SimError(404, SimErrorCode.WebhookNotFound, 'Webhook not found.');
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** HTTPS receivers only; plain http is allowed for loopback hosts (local dev and tests) or when configured. */
function checkUrl(raw: string, allowInsecure: boolean): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new SimError(400, SimErrorCode.ValidationError, 'url: must be an absolute URL');
  }
  const loopback =
    LOOPBACK_HOSTS.has(parsed.hostname) || (isIP(parsed.hostname) === 4 && parsed.hostname.startsWith('127.'));
  const ok = parsed.protocol === 'https:' || (parsed.protocol === 'http:' && (loopback || allowInsecure));
  if (!ok) throw new SimError(400, SimErrorCode.ValidationError, 'url: must be an https:// URL');
  return parsed.toString();
}

/**
 * Registry webhook management needs a personal access token (contract rule 6). A parent's token reaches a
 * tenant's project with `X-Service-Subaccount: <owned tenant>`, like any resource call.
 */
export function registerWebhookRoutes(app: FastifyInstance, sim: SimRuntime): void {
  const base = '/projects/:projectId/registry/webhooks';

  const projectOf = (request: FastifyRequest) => {
    const caller = callerOf(sim, request);
    requirePersonal(caller, 'Registry webhook management');
    return getProjectInContext(sim, contextOf(sim, request, caller), params(request).projectId ?? '');
  };
  const webhookOf = (request: FastifyRequest) => {
    const project = projectOf(request);
    const webhook = sim.state.webhooks.get(params(request).webhookId ?? '');
    if (!webhook || webhook.projectId !== project.id) throw webhookNotFound();
    return webhook;
  };

  app.post(`${base}/create`, (request, reply) => {
    const project = projectOf(request);
    const body = parseBody(createSchema, request.body);
    const now = sim.clock.now();
    const webhook: WebhookRecord = {
      seq: nextSeq(sim.state),
      id: newId('wh_'),
      projectId: project.id,
      label: body.label,
      url: checkUrl(body.url, sim.choices.allowInsecureWebhookUrls),
      secret: body.secret ?? null,
      events: [...new Set(body.events)],
      createdAt: now,
      updatedAt: now,
      deliveries: [],
    };
    sim.state.webhooks.set(webhook.id, webhook);
    sendData(reply, sim.choices.createStatus, webhookView(webhook));
  });

  app.get(base, (request, reply) => {
    const project = projectOf(request);
    const hooks = [...sim.state.webhooks.values()].filter((w) => w.projectId === project.id);
    sendData(reply, 200, listResponse(request, sim.choices, hooks, webhookView));
  });

  app.put(`${base}/:webhookId/update`, (request, reply) => {
    const webhook = webhookOf(request);
    const body = parseBody(updateSchema, request.body);
    const nextUrl = body.url === undefined ? webhook.url : checkUrl(body.url, sim.choices.allowInsecureWebhookUrls);
    webhook.url = nextUrl;
    if (body.label !== undefined) webhook.label = body.label;
    if (body.secret !== undefined) webhook.secret = body.secret;
    if (body.events !== undefined) webhook.events = [...new Set(body.events)];
    webhook.updatedAt = sim.clock.now();
    sendData(reply, 200, webhookView(webhook));
  });

  app.delete(`${base}/:webhookId/delete`, (request, reply) => {
    const webhook = webhookOf(request);
    sim.state.webhooks.delete(webhook.id);
    sendData(reply, 200, { id: webhook.id, deleted: true });
  });

  app.get(`${base}/:webhookId/deliveries`, (request, reply) => {
    const webhook = webhookOf(request);
    sendData(
      reply,
      200,
      listResponse(request, sim.choices, webhook.deliveries, (d) => deliveryView(d, sim.choices)),
    );
  });
}
