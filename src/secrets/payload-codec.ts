/**
 * A Temporal `PayloadCodec` that encrypts every payload with the master keys (defence in depth: even
 * if a token slipped into an input or result, Temporal would store only ciphertext).
 *
 * Encoded payload:
 *   metadata.encoding          = "binary/encrypted"
 *   metadata.encryption-key-id = the master key id
 *   data                       = iv (12 bytes) || ciphertext || tag (16 bytes)
 * The plaintext is the original `temporal.api.common.v1.Payload` in protobuf bytes, so decoding
 * gives back its metadata and data exactly. The GCM AAD names the format and key id.
 *
 * `decode` passes through payloads that are not encrypted, so the codec can be switched on for a
 * namespace that already holds plain history. Client, worker, CLI and the gateway's codec endpoint
 * must all use `createDataConverter` with the same `SECRETS_KEYS`.
 */
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { z } from 'zod';
import { decrypt, encrypt, IV_BYTES, keyFor, TAG_BYTES } from './aes-gcm.js';
import { CodecRequestError, SealedFormatError } from './errors.js';
import type { MasterKeyRing } from './master-keys.js';

// @temporalio/proto is CommonJS: Node's ESM loader exposes it as a default export only.
const ProtoPayload = proto.temporal.api.common.v1.Payload;

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const ENCRYPTION_KEY_ID_METADATA = 'encryption-key-id';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function createEncryptionCodec(keys: MasterKeyRing): PayloadCodec {
  return {
    async encode(payloads) {
      return payloads.map((payload) => encryptPayload(keys, payload));
    },
    async decode(payloads) {
      return payloads.map((payload) => decryptPayload(keys, payload));
    },
  };
}

/**
 * The `DataConverter` for `Connection`/`Client` and `Worker.create` options. Without master keys it
 * is empty (Temporal's defaults). Workers need nothing else: codecs run outside the workflow
 * sandbox, so no `payloadConverterPath` is involved.
 */
export function createDataConverter(keys: MasterKeyRing | undefined): DataConverter {
  return keys === undefined ? {} : { payloadCodecs: [createEncryptionCodec(keys)] };
}

export function isEncryptedPayload(payload: Payload): boolean {
  const encoding = payload.metadata?.['encoding'];
  return encoding != null && decoder.decode(encoding) === ENCRYPTED_ENCODING;
}

function encryptPayload(keys: MasterKeyRing, payload: Payload): Payload {
  const key = keys.current;
  const plaintext = ProtoPayload.encode(payload).finish();
  const { iv, ciphertext, tag } = encrypt(key, plaintext, payloadAad(key.id));
  return {
    metadata: {
      encoding: encoder.encode(ENCRYPTED_ENCODING),
      [ENCRYPTION_KEY_ID_METADATA]: encoder.encode(key.id),
    },
    data: Buffer.concat([iv, ciphertext, tag]),
  };
}

function decryptPayload(keys: MasterKeyRing, payload: Payload): Payload {
  if (!isEncryptedPayload(payload)) return payload;
  const keyIdBytes = payload.metadata?.[ENCRYPTION_KEY_ID_METADATA];
  if (keyIdBytes == null)
    throw new SealedFormatError(`encrypted payload has no "${ENCRYPTION_KEY_ID_METADATA}" metadata`);
  const keyId = decoder.decode(keyIdBytes);
  const key = keyFor(keys, keyId);
  const data = Buffer.from(payload.data ?? new Uint8Array());
  if (data.length < IV_BYTES + TAG_BYTES) throw new SealedFormatError('encrypted payload is too short');
  const parts = {
    iv: data.subarray(0, IV_BYTES),
    ciphertext: data.subarray(IV_BYTES, data.length - TAG_BYTES),
    tag: data.subarray(data.length - TAG_BYTES),
  };
  const message = ProtoPayload.decode(decrypt(key, parts, payloadAad(keyId), 'a Temporal payload'));
  // Back to the plain shape the payload converter produced: Uint8Array rather than Buffer, and no
  // protobufjs defaults for absent fields.
  const metadata = Object.entries(message.metadata).map(([name, value]) => [name, plainBytes(value)] as const);
  const decoded: Payload = { metadata: Object.fromEntries(metadata) };
  if (Object.hasOwn(message, 'data')) decoded.data = plainBytes(message.data);
  if (message.externalPayloads.length > 0) decoded.externalPayloads = message.externalPayloads;
  return decoded;
}

function plainBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function payloadAad(keyId: string): Uint8Array {
  return encoder.encode(`temporal-payload.v1.${keyId}`);
}

/** One payload in the codec server protocol (proto3 JSON): every bytes value is base64. */
export interface PayloadJson {
  metadata?: Record<string, string>;
  data?: string;
}

/** Request and response body of the codec server's `/encode` and `/decode` endpoints. */
export interface PayloadsJson {
  payloads: PayloadJson[];
}

const base64Text = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
const payloadsJsonSchema = z.object({
  payloads: z.array(
    z.object({
      metadata: z.record(z.string(), base64Text).nullish(),
      data: base64Text.nullish(),
    }),
  ),
});

/** For the codec endpoint: `POST /encode` body in, response body out. Throws `CodecRequestError` on a bad body. */
export async function encodePayloadsJson(codec: PayloadCodec, body: unknown): Promise<PayloadsJson> {
  return toJson(await codec.encode(fromJson(body)));
}

/** For the codec endpoint (`POST /decode`, used by the Web UI and CLI). Throws `CodecRequestError` on a bad body. */
export async function decodePayloadsJson(codec: PayloadCodec, body: unknown): Promise<PayloadsJson> {
  return toJson(await codec.decode(fromJson(body)));
}

function fromJson(body: unknown): Payload[] {
  const parsed = payloadsJsonSchema.safeParse(body);
  if (!parsed.success) {
    throw new CodecRequestError(
      `expected { payloads: [{ metadata: { key: base64 }, data: base64 }] }: ${z.prettifyError(parsed.error)}`,
      parsed.error,
    );
  }
  return parsed.data.payloads.map(({ metadata, data }) => {
    const payload: Payload = {
      metadata: Object.fromEntries(
        Object.entries(metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
      ),
    };
    if (data != null) payload.data = Buffer.from(data, 'base64');
    return payload;
  });
}

function toJson(payloads: Payload[]): PayloadsJson {
  return {
    payloads: payloads.map((payload) => ({
      metadata: Object.fromEntries(
        Object.entries(payload.metadata ?? {}).map(([key, value]) => [
          key,
          Buffer.from(value ?? new Uint8Array()).toString('base64'),
        ]),
      ),
      data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
    })),
  };
}
