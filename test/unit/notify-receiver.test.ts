import { afterEach, describe, expect, it } from 'vitest';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signNotice } from '../../activities/keys/deployers/notify.js';
import { startNotifyReceiver, type NoticeSummary, type NotifyReceiver } from '../../src/main/stack/notify-receiver.js';

/** The dev stack's receiver for the notify deployer: a signed notice is taken, any other refused. */
let receiver: NotifyReceiver | undefined;
afterEach(async () => receiver?.close());

const notice = {
  event: 'keyRotated',
  deliveryId: 'tpo-rot-1-keyRotated',
  externalRef: 'acme',
  slot: 'default',
  generation: 2,
  keyId: 'key_2',
  fingerprint: 'fp',
  emergency: true,
};

async function post(url: string, body: string, signature: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [SIGNATURE_HEADER]: signature,
      [EVENT_HEADER]: 'keyRotated',
      [DELIVERY_HEADER]: notice.deliveryId,
    },
    body,
  });
  return response.status;
}

describe('notify receiver', () => {
  it('answers 204 to a notice signed with its secret and records its ids', async () => {
    const summaries: NoticeSummary[] = [];
    receiver = await startNotifyReceiver({ onNotice: (summary) => summaries.push(summary) });
    const body = JSON.stringify(notice);
    expect(await post(receiver.url, body, signNotice(body, receiver.secret))).toBe(204);
    expect(receiver.received).toMatchObject([
      { event: 'keyRotated', deliveryId: notice.deliveryId, signatureValid: true, status: 204 },
    ]);
    expect(summaries).toEqual([
      expect.objectContaining({
        event: 'keyRotated',
        externalRef: 'acme',
        slot: 'default',
        generation: 2,
        keyId: 'key_2',
        signatureValid: true,
      }),
    ]);
  });

  it('refuses a notice signed with another secret or not signed, with 401', async () => {
    receiver = await startNotifyReceiver();
    const body = JSON.stringify(notice);
    expect(await post(receiver.url, body, signNotice(body, 'another secret of enough length'))).toBe(401);
    expect(await post(receiver.url, body, 'sha256=00')).toBe(401);
    expect(receiver.received.map((r) => r.signatureValid)).toEqual([false, false]);
  });
});
