import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Pool } from '../../client/records.js';
import { auditDeliveryConflict, recordRegistryDelivery } from '../../client/webhooks/webhook-inbox.js';
import { isKnownRegistryEvent, registryDeliverySchema, type RegistryDelivery } from '../../domain/delivery-body.js';
import { PUBLIC } from '../http/access.js';
import type { DeliveryDispatcher } from './delivery-dispatcher.js';
import { GatewayError, GatewayErrorCode, sendData } from '../http/errors.js';
import { unstorableTextPath } from '../http/json-body.js';
import type { GatewayMetrics } from '../http/metrics.js';
import { parseSignatureHeader, verifySignature } from './signature.js';
import type { AcceptedSecret, SecretResolver } from '../../secrets/webhook-secrets.js';
import { registryDeliveryWorkflowId } from '../../domain/ids.js';
import { doc, fromZod } from '../http/api-docs.js';

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
  /** How far the body's timestamp may be from now, either way (Standard Webhooks suggests 5 minutes). */
  toleranceSeconds: number;
}

const REGISTRATION_ID = /^whr_[A-Za-z0-9]{8,64}$/;
const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;
// ISO 8601 with a zone (Z or an offset): a zoneless time would be read in the gateway's local zone.
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

export async function webhookReceiver(scope: FastifyInstance, deps: WebhookReceiverDeps): Promise<void> {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: deps.bodyLimitBytes }, (_request, body, done) =>
    done(null, body),
  );

  scope.post(
    '/:registrationId',
    { bodyLimit: deps.bodyLimitBytes, config: { permission: PUBLIC }, schema: receiverDoc },
    async (request, reply) => {
      try {
        const result = await receive(deps, request);
        deps.metrics.webhookDeliveries.inc({ outcome: result.duplicate ? 'duplicate' : 'accepted' });
        return sendData(reply, 202, result);
      } catch (error) {
        deps.metrics.webhookDeliveries.inc({ outcome: error instanceof GatewayError ? error.code : 'error' });
        throw error;
      }
    },
  );
}

async function receive(deps: WebhookReceiverDeps, request: FastifyRequest) {
  const { registrationId } = request.params as { registrationId: string };
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  const header = request.headers['x-service-signature'];
  // A missing or malformed header is refused before any database read or decrypt: it can never verify.
  const shape = parseSignatureHeader(header);
  if (!shape.ok) throw new GatewayError(401, shape.code, signatureMessage[shape.code]);

  // An unknown (or malformed) registration id is answered exactly as a signature that does not match, after
  // the same lookups and an HMAC against a decoy secret: the answer must not tell which receiver ids exist.
  const wellFormed = REGISTRATION_ID.test(registrationId);
  const secretsOf = (fresh: boolean) =>
    wellFormed ? deps.secrets.accepted(registrationId, fresh ? { fresh: true } : undefined) : Promise.resolve([]);
  const verify = (accepted: readonly AcceptedSecret[]) =>
    verifySignature(raw, header, accepted.length > 0 ? accepted.map((s) => s.secret) : [DECOY_SECRET]);
  let secrets = await secretsOf(false);
  let check = verify(secrets);
  if (!check.ok && check.code === GatewayErrorCode.SIGNATURE_MISMATCH) {
    // Cached secrets may predate a replacement made a moment ago: check once against fresh ones.
    secrets = await secretsOf(true);
    check = verify(secrets);
  }
  if (!check.ok || secrets.length === 0) {
    const code = check.ok ? GatewayErrorCode.SIGNATURE_MISMATCH : check.code;
    throw new GatewayError(401, code, signatureMessage[code]);
  }
  const signer = secrets[check.index]!;

  const contentType = request.headers['content-type'];
  if (typeof contentType !== 'string' || !JSON_MEDIA_TYPE.test(contentType)) {
    throw new GatewayError(
      415,
      GatewayErrorCode.UNSUPPORTED_MEDIA_TYPE,
      'Deliveries must be JSON (Content-Type: application/json).',
    );
  }
  const delivery = parseDelivery(raw);
  checkConsistency(request, delivery, signer);
  // The timestamp is inside the signed body: a captured delivery replayed later is refused here.
  checkFreshness(delivery.timestamp, deps.toleranceSeconds);

  const workflowId = registryDeliveryWorkflowId(delivery.deliveryId);
  const bodySha256 = createHash('sha256').update(raw).digest('hex');
  const outcome = await recordRegistryDelivery(deps.pool, {
    deliveryId: delivery.deliveryId,
    registrationId,
    webhookId: delivery.webhookId,
    event: delivery.event,
    knownEvent: isKnownRegistryEvent(delivery.event),
    bodyText: raw.toString('utf8'),
    bodySha256,
    workflowId,
    sweepAfterSeconds: deps.dispatcher.sweepAfterSeconds,
  });
  if (outcome.recorded) deps.dispatcher.enqueue({ deliveryId: delivery.deliveryId, workflowId });
  else if (outcome.storedBodySha256 !== bodySha256)
    await refuseConflict(deps, {
      registrationId,
      deliveryId: delivery.deliveryId,
      storedBodySha256: outcome.storedBodySha256,
      bodySha256,
    });
  return { deliveryId: delivery.deliveryId, workflowId, duplicate: !outcome.recorded };
}

function checkFreshness(timestamp: string, toleranceSeconds: number): void {
  const at = Date.parse(timestamp);
  if (!ISO_INSTANT.test(timestamp) || Number.isNaN(at)) {
    throw new GatewayError(
      400,
      GatewayErrorCode.DELIVERY_INVALID,
      'The delivery timestamp must be an ISO 8601 UTC instant.',
      { fields: ['timestamp'] },
    );
  }
  if (Math.abs(Date.now() - at) > toleranceSeconds * 1000) {
    throw new GatewayError(
      400,
      GatewayErrorCode.DELIVERY_STALE,
      `The delivery timestamp is more than ${toleranceSeconds} s from the receiver's ` +
        `clock: refused as a possible replay.`,
      { fields: ['timestamp'] },
    );
  }
}

/**
 * A known delivery id with another (validly signed) body is not a redelivery: the platform resends the
 * same bytes. It is answered 409, nothing is processed, and it is recorded in the audit log with both
 * body hashes (never the bodies) for an operator to look into.
 */
async function refuseConflict(
  deps: WebhookReceiverDeps,
  conflict: { registrationId: string; deliveryId: string; storedBodySha256: string; bodySha256: string },
): Promise<never> {
  await auditDeliveryConflict(deps.pool, conflict);
  throw new GatewayError(
    409,
    GatewayErrorCode.DELIVERY_CONFLICT,
    'A delivery with this id was already received with a different body; this one is refused and recorded.',
    { fields: ['deliveryId'] },
  );
}

const signatureMessage = {
  SIGNATURE_MISSING: 'The X-Service-Signature header is missing.',
  SIGNATURE_MALFORMED: 'The X-Service-Signature header must be sha256= followed by 64 hex digits.',
  SIGNATURE_MISMATCH: 'The X-Service-Signature does not match the body.',
} as const;

// Per process and never stored: no body can be signed with it, so an unknown receiver verifies nothing.
const DECOY_SECRET = randomBytes(32).toString('base64url');

function parseDelivery(raw: Buffer): RegistryDelivery {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw new GatewayError(400, GatewayErrorCode.INVALID_JSON, 'The delivery body is not valid UTF-8 JSON.');
  }
  // Signed, but with text no record can hold (Postgres refuses NUL in jsonb): a definite 400 naming the field, not a
  // 500 that would tell the platform to deliver it again; a resend of the same bytes gets the same answer.
  const unstorable = unstorableTextPath(value);
  if (unstorable !== undefined) {
    const field = unstorable.path || 'body';
    throw new GatewayError(
      400,
      GatewayErrorCode.DELIVERY_INVALID,
      `The delivery body holds text that cannot be recorded (${unstorable.what}) at: ${field}.`,
      { fields: [field] },
    );
  }
  const parsed = registryDeliverySchema.safeParse(value);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || 'body'))];
    throw new GatewayError(
      400,
      GatewayErrorCode.DELIVERY_INVALID,
      `The delivery body is missing or has invalid fields: ${fields.join(', ')}.`,
      { fields },
    );
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
    throw new GatewayError(
      400,
      GatewayErrorCode.DELIVERY_INVALID,
      `The delivery headers or webhook do not match the body: ${fields.join(', ')}.`,
      { fields },
    );
  }
}

const receiverDoc = doc({
  summary: 'Registry webhook receiver (called by the platform)',
  description:
    'Its own proof, no bearer token: X-Service-Signature must be sha256= and 64 hex digits, HMAC-SHA256 of the ' +
    "exact body with the webhook secret, and the body's timestamp within the tolerance (default 5 minutes) of our " +
    'clock. Verified deliveries are recorded once per deliveryId and processed asynchronously.',
  params: { registrationId: { type: 'string' } },
  headers: {
    'X-Service-Signature': { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
    'X-Service-Event': { type: 'string' },
    'X-Service-Delivery': { type: 'string' },
  },
  body: fromZod(registryDeliverySchema),
  answers: {
    202: {
      description: 'Recorded (or a duplicate of a recorded delivery).',
      data: {
        type: 'object',
        required: ['deliveryId', 'workflowId', 'duplicate'],
        properties: { deliveryId: { type: 'string' }, workflowId: { type: 'string' }, duplicate: { type: 'boolean' } },
      },
    },
    400:
      'INVALID_JSON, DELIVERY_INVALID (also text no record can hold, such as NUL), or DELIVERY_STALE (timestamp ' +
      'outside the tolerance).',
    401:
      'SIGNATURE_MISSING, SIGNATURE_MALFORMED or SIGNATURE_MISMATCH (also the answer for an unknown receiver id: it ' +
      'is not told apart from a wrong signature).',
    409: 'A known deliveryId with a different body (DELIVERY_CONFLICT); recorded, not processed.',
    413: 'PAYLOAD_TOO_LARGE.',
    415: 'UNSUPPORTED_MEDIA_TYPE.',
  },
  security: [],
});
