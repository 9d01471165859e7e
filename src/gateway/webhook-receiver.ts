import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Pool } from '../db/pool.js';
import { insertDeliveryIfAbsent } from '../db/webhook-inbox-store.js';
import { isKnownRegistryEvent, registryDeliverySchema, registryWorkflowId, type RegistryDelivery } from './delivery-body.js';
import type { DeliveryDispatcher } from './delivery-dispatcher.js';
import { GatewayError, GatewayErrorCode, sendData } from './errors.js';
import type { GatewayMetrics } from './metrics.js';
import { verifySignature } from './signature.js';
import type { AcceptedSecret, SecretResolver } from './webhook-secrets.js';

/**
 * `POST /webhooks/registry/:registrationId` — one route per registration. The body is kept as the exact
 * bytes received (a raw-buffer content-type parser in this plugin only) and is verified BEFORE it is
 * parsed; only then is it read as JSON, recorded in the inbox (delivery id unique) and answered 202.
 * Processing happens later, in `handleRegistryEvent`, started by the dispatcher.
 */
export interface WebhookReceiverDeps {
  pool: Pool;
  secrets: SecretResolver;
  dispatcher: DeliveryDispatcher;
  metrics: GatewayMetrics;
  bodyLimitBytes: number;
}

const REGISTRATION_ID = /^whr_[A-Za-z0-9]{8,64}$/;
const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

export function registerWebhookReceiver(app: FastifyInstance, deps: WebhookReceiverDeps): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: deps.bodyLimitBytes }, (_request, body, done) => done(null, body));

    scope.post('/webhooks/registry/:registrationId', { bodyLimit: deps.bodyLimitBytes }, async (request, reply) => {
      try {
        const result = await receive(deps, request);
        deps.metrics.webhookDeliveries.inc({ outcome: result.duplicate ? 'duplicate' : 'accepted' });
        return sendData(reply, 202, result);
      } catch (error) {
        deps.metrics.webhookDeliveries.inc({ outcome: error instanceof GatewayError ? error.code : 'error' });
        throw error;
      }
    });
  });
}

async function receive(deps: WebhookReceiverDeps, request: FastifyRequest) {
  const { registrationId } = request.params as { registrationId: string };
  if (!REGISTRATION_ID.test(registrationId)) throw notFound();
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  const header = request.headers['x-service-signature'];

  let secrets = await deps.secrets.accepted(registrationId);
  let check = verifySignature(raw, header, secrets.map((s) => s.secret));
  if (!check.ok && check.code === GatewayErrorCode.SIGNATURE_MISMATCH) {
    // Cached secrets may predate a replacement made a moment ago: check once against fresh ones.
    secrets = await deps.secrets.accepted(registrationId, { fresh: true });
    check = verifySignature(raw, header, secrets.map((s) => s.secret));
  }
  if (secrets.length === 0) throw notFound();
  if (!check.ok) throw new GatewayError(401, check.code, signatureMessage[check.code]);
  const signer = secrets[check.index]!;

  const contentType = request.headers['content-type'];
  if (typeof contentType !== 'string' || !JSON_MEDIA_TYPE.test(contentType)) {
    throw new GatewayError(415, GatewayErrorCode.UNSUPPORTED_MEDIA_TYPE, 'Deliveries must be JSON (Content-Type: application/json).');
  }
  const delivery = parseDelivery(raw);
  checkConsistency(request, delivery, signer);

  const workflowId = registryWorkflowId(delivery.deliveryId);
  const inserted = await insertDeliveryIfAbsent(deps.pool, {
    deliveryId: delivery.deliveryId,
    registrationId,
    webhookId: delivery.webhookId,
    event: delivery.event,
    knownEvent: isKnownRegistryEvent(delivery.event),
    bodyText: raw.toString('utf8'),
    bodySha256: createHash('sha256').update(raw).digest('hex'),
    workflowId,
    sweepAfterSeconds: deps.dispatcher.sweepAfterSeconds,
  });
  if (inserted) deps.dispatcher.enqueue({ deliveryId: delivery.deliveryId, workflowId });
  return { deliveryId: delivery.deliveryId, workflowId, duplicate: !inserted };
}

const signatureMessage = {
  SIGNATURE_MISSING: 'The X-Service-Signature header is missing.',
  SIGNATURE_MALFORMED: 'The X-Service-Signature header must be sha256= followed by 64 lower-case hex digits.',
  SIGNATURE_MISMATCH: 'The X-Service-Signature does not match the body.',
} as const;

function notFound(): GatewayError {
  return new GatewayError(404, GatewayErrorCode.WEBHOOK_NOT_FOUND, 'No webhook receiver at this address.');
}

function parseDelivery(raw: Buffer): RegistryDelivery {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw new GatewayError(400, GatewayErrorCode.INVALID_JSON, 'The delivery body is not valid UTF-8 JSON.');
  }
  const parsed = registryDeliverySchema.safeParse(value);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || 'body'))];
    throw new GatewayError(400, GatewayErrorCode.DELIVERY_INVALID, `The delivery body is missing or has invalid fields: ${fields.join(', ')}.`, { fields });
  }
  return parsed.data;
}

/** Headers and body must agree, and the body must name the webhook whose secret signed it. */
function checkConsistency(request: FastifyRequest, delivery: RegistryDelivery, signer: AcceptedSecret): void {
  const fields: string[] = [];
  const deliveryHeader = request.headers['x-service-delivery'];
  const eventHeader = request.headers['x-service-event'];
  if (deliveryHeader !== undefined && deliveryHeader !== delivery.deliveryId) fields.push('deliveryId');
  if (eventHeader !== undefined && eventHeader !== delivery.event) fields.push('event');
  if (signer.webhookId !== null && signer.webhookId !== delivery.webhookId) fields.push('webhookId');
  if (fields.length > 0) {
    throw new GatewayError(400, GatewayErrorCode.DELIVERY_INVALID, `The delivery headers or webhook do not match the body: ${fields.join(', ')}.`, { fields });
  }
}
