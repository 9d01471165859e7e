import type { PayloadCodec } from '@temporalio/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CodecRequestError } from '../../secrets/errors.js';
import { decodePayloadsJson, encodePayloadsJson } from '../../secrets/payload-codec.js';
import { PUBLIC } from '../http/access.js';
import { bearerTokenOf, isLoopback, unauthorized, type TokenSet } from '../http/auth.js';
import { GatewayError, GatewayErrorCode } from '../http/errors.js';
import { doc } from '../http/api-docs.js';

/**
 * The remote payload codec for the Temporal Web UI and CLI (`POST /codec/encode`, `/codec/decode`, the
 * codec server protocol: `{ payloads: [...] }` in and out). Point the UI at it with
 * `temporal server start-dev --ui-codec-endpoint http://127.0.0.1:<port>/codec` (or the UI's
 * "Codec Server" setting). The browser calls it cross-origin, so allowed UI origins get CORS answers,
 * preflight included. Operators authenticate with a bearer token; with no tokens configured only
 * loopback clients are served (a local UI in development).
 */
export interface CodecRoutesDeps {
  codec: PayloadCodec | undefined;
  tokens: TokenSet;
  corsOrigins: readonly string[];
  /** Host names it answers to besides the loopback ones (GATEWAY_CODEC_HOSTS, GATEWAY_HOST, the public URL's). */
  hosts?: readonly string[];
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/**
 * DNS rebinding: a page on evil.example whose name is made to resolve to 127.0.0.1 reaches a loopback codec from the
 * operator's own browser, with the browser's Host header still naming evil.example. Only the gateway's own names pass.
 */
function hostAllowed(host: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (host === undefined) return false;
  const name = host.trim().toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
  return allowed.has(name) || name.endsWith('.localhost');
}

function checkHost(request: FastifyRequest, allowed: ReadonlySet<string>): void {
  if (hostAllowed(request.headers.host, allowed)) return;
  request.log.warn('codec request refused: its Host is not one of the gateway names (see GATEWAY_CODEC_HOSTS)');
  throw new GatewayError(
    403,
    GatewayErrorCode.FORBIDDEN,
    'The codec answers only under the gateway names (loopback, GATEWAY_HOST, GATEWAY_PUBLIC_URL, GATEWAY_CODEC_HOSTS).',
  );
}

const ALLOWED_HEADERS = 'content-type, x-namespace, authorization';

export async function codecRoutes(scope: FastifyInstance, deps: CodecRoutesDeps): Promise<void> {
  const allowed = new Set(deps.corsOrigins);
  const hosts = new Set([...LOOPBACK_NAMES, ...(deps.hosts ?? [])].map((name) => name.toLowerCase()));

  scope.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (typeof origin === 'string' && allowed.has(origin)) {
      void reply.headers({
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Credentials': 'true',
        Vary: 'Origin',
      });
    }
  });

  scope.options('/:operation', { config: { permission: PUBLIC }, schema: preflightDoc }, async (request, reply) => {
    checkHost(request, hosts);
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !allowed.has(origin)) {
      // The browser only reports "could not connect": say here which origin to add.
      request.log.warn({ origin }, 'codec preflight refused: origin not in GATEWAY_CODEC_CORS_ORIGINS');
      throw new GatewayError(
        403,
        GatewayErrorCode.FORBIDDEN,
        'This origin may not call the codec endpoint (see GATEWAY_CODEC_CORS_ORIGINS).',
      );
    }
    return reply
      .code(204)
      .headers({
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': ALLOWED_HEADERS,
        'Access-Control-Max-Age': '600',
      })
      .send();
  });

  scope.post('/encode', { config: { permission: PUBLIC }, schema: encodeDoc }, async (request, reply) =>
    run(deps, hosts, request, reply, encodePayloadsJson),
  );
  scope.post('/decode', { config: { permission: PUBLIC }, schema: decodeDoc }, async (request, reply) =>
    run(deps, hosts, request, reply, decodePayloadsJson),
  );
}

async function run(
  deps: CodecRoutesDeps,
  hosts: ReadonlySet<string>,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: (codec: PayloadCodec, body: unknown) => Promise<unknown>,
): Promise<FastifyReply> {
  checkHost(request, hosts);
  authorize(deps.tokens, request);
  if (!deps.codec)
    throw new GatewayError(
      503,
      GatewayErrorCode.CODEC_NOT_CONFIGURED,
      'No payload codec is configured (set SECRETS_KEYS).',
    );
  try {
    return reply.code(200).send(await operation(deps.codec, withPayloadsList(request.body)));
  } catch (error) {
    if (error instanceof CodecRequestError)
      throw new GatewayError(
        400,
        GatewayErrorCode.INVALID_INPUT,
        'Expected { payloads: [{ metadata, data }] } with base64 values.',
      );
    // A payload sealed under a key this gateway does not hold, or tampered with: say so without detail.
    throw new GatewayError(
      422,
      GatewayErrorCode.CODEC_FAILED,
      'A payload could not be decoded with the configured keys.',
    );
  }
}

/**
 * The codec-server protocol carries protojson `Payloads`, and protojson omits an empty repeated field:
 * the Temporal CLI sends `{}` for a signal without input. No body, `{}` and `payloads: null` all mean
 * "no payloads".
 */
function withPayloadsList(body: unknown): unknown {
  if (body === undefined || body === null) return { payloads: [] };
  if (typeof body === 'object' && !Array.isArray(body) && (body as { payloads?: unknown }).payloads == null)
    return { ...body, payloads: [] };
  return body;
}

function authorize(tokens: TokenSet, request: FastifyRequest): void {
  if (tokens.size === 0) {
    if (!isLoopback(request.socket.remoteAddress ?? '')) throw unauthorized();
    return;
  }
  const token = bearerTokenOf(request.headers.authorization);
  if (token === undefined || !tokens.matches(token)) throw unauthorized();
}

const payloads = {
  type: 'object',
  description: 'An absent body, `{}` or a missing payloads list mean no payloads (protojson omits an empty list).',
  properties: {
    payloads: {
      type: ['array', 'null'],
      items: {
        type: 'object',
        properties: {
          metadata: { type: 'object', additionalProperties: { type: 'string', contentEncoding: 'base64' } },
          data: { type: 'string', contentEncoding: 'base64' },
        },
      },
    },
  },
};
const hostAnswer = 'Not called under a gateway name, or (preflight) from an origin not allowed (FORBIDDEN).';

const preflightDoc = doc({
  summary: "CORS preflight for the Temporal Web UI's codec calls (GATEWAY_CODEC_CORS_ORIGINS)",
  params: { operation: { type: 'string', enum: ['encode', 'decode'] } },
  answers: { 204: { description: 'Allowed: the CORS headers.', empty: true }, 403: hostAnswer },
});

const codecDoc = (operation: 'encode' | 'decode') =>
  doc({
    summary: `Payload codec: ${operation} (the Temporal codec server protocol)`,
    description:
      'Its own tokens, not the roles table: one of GATEWAY_CODEC_TOKENS as a bearer token (with none configured, ' +
      'loopback callers only).',
    body: payloads,
    bodyOptional: true,
    answers: {
      200: { description: 'The payloads, transformed.', raw: payloads },
      401: 'Missing or unknown codec token (UNAUTHORIZED).',
      403: hostAnswer,
      422: 'A payload could not be decoded with the configured keys (CODEC_FAILED).',
      503: 'No payload codec is configured (CODEC_NOT_CONFIGURED).',
    },
    security: [{ codecBearer: [] }],
  });
const encodeDoc = codecDoc('encode');
const decodeDoc = codecDoc('decode');
