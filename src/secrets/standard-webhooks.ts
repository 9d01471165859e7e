import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signing as the Standard Webhooks specification has it (https://www.standardwebhooks.com): the
 * secret is `whsec_` + base64 of random bytes; the signed content is `${webhook-id}.${webhook-timestamp}.${body}`;
 * `webhook-signature` is a space-separated list of `v1,<base64 HMAC-SHA256>` (several during a secret rotation).
 * Receivers verify with any Standard Webhooks library (e.g. npm `standardwebhooks`).
 */
export const SECRET_PREFIX = 'whsec_';

export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of a delivery, signed with every secret given (newest first). */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signatureOf(s, id, timestampSeconds, body)).join(' '),
  };
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/**
 * The receiver's side, written from the specification (headers present, timestamp within the
 * tolerance, any one v1 signature matching in constant time). Used by the dev stack's receiver.
 */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): void {
  const header = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing required headers');
  if (!/^[0-9]{1,12}$/.test(timestamp)) throw new WebhookVerificationError('invalid timestamp');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) throw new WebhookVerificationError('timestamp out of tolerance');
  const expected = Buffer.from(signatureOf(secret, id, Number(timestamp), body).slice(3), 'base64');
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
  }
  throw new WebhookVerificationError('no matching signature');
}

/** The AAD of a subscription's signing secret: names subscription and generation, so a sealed value cannot be moved. */
export function subscriptionSecretAad(owner: { subscriptionId: string; generation: number }): string {
  return JSON.stringify(['event-subscription-secret', owner.subscriptionId, owner.generation]);
}
