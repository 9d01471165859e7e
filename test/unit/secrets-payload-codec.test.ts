import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { CodecRequestError, DecryptionError, UnknownKeyIdError } from '../../src/secrets/errors.js';
import { createMasterKeyRing, MasterKey } from '../../src/secrets/master-keys.js';
import {
  createDataConverter,
  createEncryptionCodec,
  decodePayloadsJson,
  encodePayloadsJson,
  ENCRYPTED_ENCODING,
  isEncryptedPayload,
} from '../../src/secrets/payload-codec.js';

const token = 'svsk_live_4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e';
const k1 = new MasterKey('k1', randomBytes(32));
const codec = createEncryptionCodec(createMasterKeyRing([k1]));
const text = (bytes: Uint8Array | null | undefined): string => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');

const samples: Payload[] = [
  defaultPayloadConverter.toPayload({ externalRef: 'cust-42', token, amount: '1000000' }),
  defaultPayloadConverter.toPayload('plain string'),
  defaultPayloadConverter.toPayload(undefined),
  defaultPayloadConverter.toPayload(null),
  defaultPayloadConverter.toPayload(new Uint8Array([0, 1, 2, 255])),
];

describe('encryption codec', () => {
  it('round-trips real payloads exactly', async () => {
    const decoded = await codec.decode(await codec.encode(samples));
    expect(decoded).toEqual(samples);
    expect(decoded.map((payload) => defaultPayloadConverter.fromPayload(payload))).toEqual([
      { externalRef: 'cust-42', token, amount: '1000000' },
      'plain string',
      undefined,
      null,
      new Uint8Array([0, 1, 2, 255]),
    ]);
  });

  it('marks encoded payloads and leaves no plaintext in them', async () => {
    const encoded = await codec.encode(samples);
    for (const payload of encoded) {
      expect(isEncryptedPayload(payload)).toBe(true);
      expect(text(payload.metadata?.['encoding'])).toBe(ENCRYPTED_ENCODING);
      expect(text(payload.metadata?.['encryption-key-id'])).toBe('k1');
      expect(Object.keys(payload.metadata ?? {}).sort()).toEqual(['encoding', 'encryption-key-id']);
    }
    const everything = encoded.map((payload) => Buffer.from(payload.data ?? []).toString('latin1')).join();
    for (const secret of ['svsk_', 'cust-42', 'json/plain', 'plain string']) expect(everything).not.toContain(secret);
  });

  it('passes through payloads that are not encrypted', async () => {
    expect(await codec.decode(samples)).toEqual(samples);
  });

  it('decodes payloads sealed under an older key and encodes under the first', async () => {
    const old = await codec.encode(samples.slice(0, 1));
    const rotated = createEncryptionCodec(createMasterKeyRing([new MasterKey('k2', randomBytes(32)), k1]));
    expect(await rotated.decode(old)).toEqual(samples.slice(0, 1));
    const [fresh] = await rotated.encode(samples.slice(0, 1));
    expect(text(fresh?.metadata?.['encryption-key-id'])).toBe('k2');
  });

  it('fails clearly on an unknown key id', async () => {
    const other = createEncryptionCodec(createMasterKeyRing([new MasterKey('elsewhere', randomBytes(32))]));
    const error = await other.decode(await codec.encode(samples.slice(0, 1))).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnknownKeyIdError);
    expect((error as UnknownKeyIdError).keyId).toBe('k1');
    expect((error as Error).message).toContain('"k1"');
  });

  it('fails on a tampered payload', async () => {
    const [encoded] = await codec.encode(samples.slice(0, 1));
    const data = Buffer.from(encoded?.data ?? []);
    data[20] = (data[20] ?? 0) ^ 1;
    const error = await codec.decode([{ ...encoded, data }]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DecryptionError);
  });

  it('createDataConverter adds the codec only when keys are configured', async () => {
    expect(createDataConverter(undefined)).toEqual({});
    const converter = createDataConverter(createMasterKeyRing([k1]));
    expect(converter.payloadCodecs).toHaveLength(1);
    const [fromConverter] = converter.payloadCodecs ?? [];
    expect(await codec.decode((await fromConverter?.encode(samples)) ?? [])).toEqual(samples);
  });
});

describe('codec server JSON', () => {
  const b64 = (value: string): string => Buffer.from(value).toString('base64');
  const body = {
    payloads: [
      { metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify({ externalRef: 'cust-42', token })) },
    ],
  };

  it('encodes and decodes the Web UI protocol shape', async () => {
    const encoded = await encodePayloadsJson(codec, body);
    expect(encoded.payloads).toHaveLength(1);
    expect(encoded.payloads[0]?.metadata?.['encoding']).toBe(b64(ENCRYPTED_ENCODING));
    expect(JSON.stringify(encoded)).not.toContain(b64('json/plain'));
    expect(await decodePayloadsJson(codec, encoded)).toEqual(body);
  });

  it('passes through plain payloads on decode', async () => {
    expect(await decodePayloadsJson(codec, body)).toEqual(body);
  });

  it('rejects a body that is not { payloads: [...] }', async () => {
    for (const bad of [null, {}, { payloads: 'x' }, { payloads: [{ data: 'not base64!' }] }]) {
      await expect(decodePayloadsJson(codec, bad)).rejects.toBeInstanceOf(CodecRequestError);
    }
  });
});
