import { describe, expect, it } from 'vitest';
import {
  signatureOf,
  signedHeaders,
  verifyWebhook,
  WebhookVerificationError,
} from '../../src/secrets/standard-webhooks.js';
import { verifyStandardWebhook } from '../harness/event-receiver.js';

// The Standard Webhooks specification's published test vector (reproduced by its reference libraries).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('Standard Webhooks signatures', () => {
  it('reproduces the specification test vector exactly', () => {
    expect(signatureOf(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it("the tests' receiver verifies the vector, and refuses it with one byte of the body changed", () => {
    const headers = {
      'webhook-id': VECTOR.id,
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': '',
    };
    const now = Number(headers['webhook-timestamp']);
    headers['webhook-signature'] = signatureOf(VECTOR.secret, VECTOR.id, now, VECTOR.body);
    expect(verifyStandardWebhook(VECTOR.secret, headers, VECTOR.body)).toBe(true);
    expect(verifyStandardWebhook(VECTOR.secret, headers, VECTOR.body.replace('2', '3'))).toBe(false);
  });

  it('sends one signature per live secret during a rotation; either secret verifies', () => {
    const secrets = ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_dGhlIG90aGVyIHNlY3JldCBvZiAzMiBieXRlcyEh'];
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders(secrets, 'evt_1', now, '{}');
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of secrets) expect(() => verifyWebhook(secret, headers, '{}')).not.toThrow();
    expect(() => verifyWebhook(secrets[0]!, { ...headers, 'webhook-timestamp': String(now - 3600) }, '{}')).toThrow(
      WebhookVerificationError,
    );
  });
});
