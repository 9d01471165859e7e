import { z } from 'zod';

// Loose on purpose: v1 adds fields over time and clients ignore unknown ones (contract, "Versioning").
const metaSchema = z.looseObject({ requestId: z.string().optional(), request_id: z.string().optional() });
const errorObjectSchema = z.looseObject({
  code: z.union([z.string(), z.number()]).optional(),
  message: z.string().optional(),
});
const envelopeSchema = z.looseObject({
  meta: metaSchema.optional().catch(undefined),
  error: z.union([errorObjectSchema, z.string()]).optional().catch(undefined),
});

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface Envelope {
  /** The parsed body, when it was a JSON object (cursors may sit beside `data`, so list code needs it). */
  body: JsonObject | undefined;
  /** The success payload ("the service" in the contract, `data` in practice). */
  payload: unknown;
  requestId: string | undefined;
  errorCode: string | undefined;
  errorMessage: string | undefined;
}

const ENVELOPE_KEYS = new Set(['meta', 'error']);
const CODE_LIKE = /^[A-Za-z][A-Za-z0-9_.-]*$/;

/**
 * The contract says the payload sits under one key beside `meta`, never at the top level, and docs/architecture.md
 * ("Platform client") names that key `data`. We read `data` first; without it, a single other object/array-valued
 * key is the payload (a platform that names it after the resource); failing that, the body minus `meta` (a top-level
 * payload, tolerated).
 */
function payloadOf(body: JsonObject): unknown {
  if ('data' in body) return body.data;
  const keys = Object.keys(body).filter((key) => !ENVELOPE_KEYS.has(key));
  if (keys.length === 0) return undefined;
  if (keys.length === 1) {
    const only = body[keys[0] as string];
    if (typeof only === 'object' && only !== null) return only;
  }
  return Object.fromEntries(keys.map((key) => [key, body[key]]));
}

export function readEnvelope(parsed: unknown): Envelope {
  if (Array.isArray(parsed)) {
    return { body: undefined, payload: parsed, requestId: undefined, errorCode: undefined, errorMessage: undefined };
  }
  if (!isObject(parsed)) {
    return { body: undefined, payload: parsed, requestId: undefined, errorCode: undefined, errorMessage: undefined };
  }
  const env = envelopeSchema.parse(parsed);
  const error = env.error;
  // Some stacks put code/message at the top level of an error body, or `error` as a bare string; accept both, but a
  // bare string only counts as a code when it looks like one (not a reason phrase such as "Not Found").
  const topCode = typeof parsed.code === 'string' ? parsed.code : undefined;
  const topMessage = typeof parsed.message === 'string' ? parsed.message : undefined;
  let errorCode = topCode;
  let errorMessage = topMessage;
  if (typeof error === 'object') {
    errorCode = error.code !== undefined ? String(error.code) : topCode;
    errorMessage = error.message ?? topMessage;
  } else if (typeof error === 'string') {
    if (CODE_LIKE.test(error)) errorCode ??= error;
    else errorMessage ??= error;
  }
  return {
    body: parsed,
    payload: payloadOf(parsed),
    requestId: env.meta?.requestId ?? env.meta?.request_id,
    errorCode,
    errorMessage,
  };
}

/** JSON.parse that reports failure instead of throwing; an empty body is `undefined`, not an error. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text.trim() === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}
