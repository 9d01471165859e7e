import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { computeSignature, parseSignatureHeader, verifySignature } from '../../src/gateway/webhooks/signature.js';

const body = Buffer.from(
  '{"event":"image.pushed","deliveryId":"dlv_1","webhookId":"wh_1","payload":{"image":"a","tag":"b"}}',
);
const current = 'current-secret-value';
const previous = 'previous-secret-value';

describe('registry delivery signatures', () => {
  it('matches an HMAC-SHA256 of the exact bytes computed independently', () => {
    expect(computeSignature(current, body)).toBe(`sha256=${createHmac('sha256', current).update(body).digest('hex')}`);
  });

  it('accepts the current and the previous secret and says which matched', () => {
    expect(verifySignature(body, computeSignature(current, body), [current, previous])).toEqual({ ok: true, index: 0 });
    expect(verifySignature(body, computeSignature(previous, body), [current, previous])).toEqual({
      ok: true,
      index: 1,
    });
  });

  it('refuses a signature made with a secret that is not accepted', () => {
    expect(verifySignature(body, computeSignature('someone-else', body), [current, previous])).toEqual({
      ok: false,
      code: 'SIGNATURE_MISMATCH',
    });
    expect(verifySignature(body, computeSignature(current, body), [])).toEqual({
      ok: false,
      code: 'SIGNATURE_MISMATCH',
    });
  });

  it('checks the header shape before computing anything', () => {
    const hex = computeSignature(current, body).slice(7);
    expect(parseSignatureHeader(undefined)).toEqual({ ok: false, code: 'SIGNATURE_MISSING' });
    expect(parseSignatureHeader('')).toEqual({ ok: false, code: 'SIGNATURE_MISSING' });
    for (const bad of [
      `SHA256=${hex}`,
      `sha1=${hex}`,
      `sha256=${hex.slice(1)}`,
      `sha256=${hex}0`,
      `sha256=${hex} `,
      ` sha256=${hex}`,
      `sha256=${hex.slice(0, 63)}g`,
    ]) {
      expect(parseSignatureHeader(bad), bad).toEqual({ ok: false, code: 'SIGNATURE_MALFORMED' });
    }
    expect(parseSignatureHeader([`sha256=${hex}`, `sha256=${hex}`])).toEqual({
      ok: false,
      code: 'SIGNATURE_MALFORMED',
    });
    expect(parseSignatureHeader(`sha256=${hex}`)).toMatchObject({ ok: true });
    // "64 hexadecimal characters": the contract does not say lower-case.
    expect(verifySignature(body, `sha256=${hex.toUpperCase()}`, [current])).toEqual({ ok: true, index: 0 });
  });

  it('refuses a body that differs by one byte, is truncated, or is re-serialized', () => {
    const signature = computeSignature(current, body);
    const flipped = Buffer.from(body);
    flipped[10] = flipped[10]! ^ 1;
    const reserialized = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1));
    for (const tampered of [
      flipped,
      body.subarray(0, body.length - 1),
      reserialized,
      Buffer.concat([body, Buffer.from('\n')]),
    ]) {
      expect(verifySignature(tampered, signature, [current, previous])).toEqual({
        ok: false,
        code: 'SIGNATURE_MISMATCH',
      });
    }
  });
});
