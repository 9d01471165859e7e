import type { FastifyInstance } from 'fastify';
import { webhookReceiver, type WebhookReceiverDeps } from './webhook-receiver.js';
import { webhookRoutes, type WebhookRoutesDeps } from './webhook-routes.js';

/**
 * The webhooks area: the registrations operators manage (`/v1/webhooks…`) and the receiver the platform calls
 * (`/webhooks/registry/:registrationId`, its own body parser), each under its own prefix.
 */
export type WebhooksAreaDeps = WebhookRoutesDeps & WebhookReceiverDeps;

export async function webhooksArea(app: FastifyInstance, deps: WebhooksAreaDeps): Promise<void> {
  await app.register(webhookRoutes, { prefix: '/v1/webhooks', ...deps });
  await app.register(webhookReceiver, { prefix: '/webhooks/registry', ...deps });
}
