import { resourceAuthHeaders, type ResourceAuth } from './auth.js';
import { callOf } from './call-options.js';
import { listAll, request, type ClientContext } from './core.js';
import { asText, pick } from './normalize.js';
import { parseDelivery, parseWebhook } from './parse-resources.js';
import { SecretToken } from './secret-token.js';
import type { PlatformClient, WebhookProjectInput } from './types.js';
import { assertId, assertNonEmpty } from './validate.js';

type WebhookMethods = Pick<
  PlatformClient,
  'createWebhook' | 'listWebhooks' | 'updateWebhook' | 'deleteWebhook' | 'listWebhookDeliveries'
>;

// Registry webhook management uses a personal access token (contract, Authentication rule 6).
const PERSONAL: ResourceAuth = { kind: 'personal' };

function secretText(secret: SecretToken | string | undefined): string | undefined {
  return secret === undefined ? undefined : SecretToken.from(secret).reveal();
}

export function webhookMethods(ctx: ClientContext): WebhookMethods {
  const scope = (operation: string, input: WebhookProjectInput, webhookId?: string) => ({
    headers: resourceAuthHeaders(input.auth ?? PERSONAL, ctx.credentials, operation),
    params: {
      projectId: assertId(input.projectId, 'projectId', operation),
      ...(webhookId === undefined ? {} : { webhookId: assertId(webhookId, 'webhookId', operation) }),
    },
    call: callOf(input),
  });

  return {
    async createWebhook(input) {
      const operation = 'createWebhook';
      const body = {
        label: assertNonEmpty(input.label, 'label', operation),
        url: assertNonEmpty(input.url, 'url', operation),
        secret: secretText(input.secret),
        events: input.events,
      };
      const { requestId, value } = await request(
        ctx,
        { operation, method: 'POST', body, replaySafe: false, ...scope(operation, input) },
        parseWebhook,
      );
      return { requestId, webhook: value };
    },

    async listWebhooks(input) {
      const operation = 'listWebhooks';
      const outcome = await listAll(
        ctx,
        { operation, method: 'GET', replaySafe: false, ...scope(operation, input) },
        { resourceKeys: ['webhooks'], idOf: (item) => asText(pick(item, ['id', 'webhookId'])), parse: parseWebhook },
      );
      return { requestId: outcome.requestId, requestIds: outcome.requestIds, webhooks: outcome.items };
    },

    async updateWebhook(input) {
      const operation = 'updateWebhook';
      // Only the fields given are sent; the contract lists label, url, secret and events as updatable.
      const body = {
        label: input.label,
        url: input.url,
        secret: secretText(input.secret),
        events: input.events,
      };
      const { requestId, value } = await request(
        ctx,
        { operation, method: 'PUT', body, replaySafe: true, ...scope(operation, input, input.webhookId) },
        parseWebhook,
      );
      return { requestId, webhook: value };
    },

    async deleteWebhook(input) {
      const operation = 'deleteWebhook';
      const { requestId } = await request(
        ctx,
        { operation, method: 'DELETE', replaySafe: true, ...scope(operation, input, input.webhookId) },
        () => undefined,
      );
      return { requestId };
    },

    async listWebhookDeliveries(input) {
      const operation = 'listWebhookDeliveries';
      const outcome = await listAll(
        ctx,
        { operation, method: 'GET', replaySafe: false, ...scope(operation, input, input.webhookId) },
        {
          resourceKeys: ['deliveries'],
          idOf: (item) => asText(pick(item, ['deliveryId', 'delivery_id', 'id'])),
          parse: parseDelivery,
        },
      );
      return { requestId: outcome.requestId, requestIds: outcome.requestIds, deliveries: outcome.items };
    },
  };
}
