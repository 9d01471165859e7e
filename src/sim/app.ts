import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { markDropAfterCommit, sendError } from './envelope.js';
import { SimError, SimErrorCode } from './errors.js';
import { newId } from './ids.js';
import { registerAdminRoutes } from './routes/admin.js';
import { API_PREFIX } from './routes/common.js';
import { registerKeyRoutes } from './routes/keys.js';
import { registerMachineDeniedRoutes } from './routes/machine-denied.js';
import { registerProjectRoutes } from './routes/projects.js';
import { registerSubaccountRoutes } from './routes/subaccounts.js';
import { registerWalletRoutes } from './routes/wallet.js';
import { registerWebhookRoutes } from './routes/webhooks.js';
import { SimRuntime, type SimRuntimeOptions } from './runtime.js';
import { installSnakeCase } from './wire-case.js';

export const BODY_LIMIT_BYTES = 64 * 1024;

export interface SimulatorAppOptions extends SimRuntimeOptions {
  /** Fastify logger; off by default so test output stays quiet. */
  logger?: boolean;
}

export interface SimulatorApp {
  app: FastifyInstance;
  runtime: SimRuntime;
}

/** Builds the simulator's Fastify app without listening (pg-boss style), for `inject` tests or `startSimulator`. */
export function buildSimulatorApp(options: SimulatorAppOptions = {}): SimulatorApp {
  const runtime = new SimRuntime(options);
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    // close() must not wait for requests held by a delay fault (or a client that went away).
    forceCloseConnections: true,
    genReqId: () => newId('req_'),
    requestIdHeader: false,
    frameworkErrors: (error, _request, reply) => {
      sendError(reply, 400, SimErrorCode.BadRequest, `Bad request: ${error.message}`);
    },
    clientErrorHandler: answerClientError,
  });

  installBodyParser(app);
  app.setErrorHandler((error, request, reply) => answerError(error, request, reply));
  app.setNotFoundHandler((request, reply) => {
    sendError(reply, 404, SimErrorCode.RouteNotFound, `No route for ${request.method} ${request.url.split('?')[0]}.`);
  });
  app.addHook('onRequest', (request, reply) => applyTraffic(runtime, request, reply));
  app.addHook('onResponse', (request, reply, done) => {
    if (reply.statusCode === 401 && request.url.startsWith(`${API_PREFIX}/`)) {
      const bearer = /^Bearer +(\S+)/i.exec(request.headers.authorization ?? '')?.[1];
      runtime.traffic.countUnauthorized(/^(svpk_|svsk_|sv_)/.exec(bearer ?? '')?.[1] ?? 'none');
    }
    done();
  });
  if (runtime.choices.fieldCase === 'snake') installSnakeCase(app, API_PREFIX);

  void app.register(
    (api, _opts, done) => {
      registerSubaccountRoutes(api, runtime);
      registerWalletRoutes(api, runtime);
      registerKeyRoutes(api, runtime);
      registerProjectRoutes(api, runtime);
      registerWebhookRoutes(api, runtime);
      registerMachineDeniedRoutes(api, runtime);
      done();
    },
    { prefix: API_PREFIX },
  );
  void app.register((admin, _opts, done) => {
    registerAdminRoutes(admin, runtime);
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    runtime.delivery.cancelAll();
    done();
  });
  return { app, runtime };
}

/** Malformed HTTP never reaches Fastify's request cycle; answer it in the envelope anyway, then hang up. */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) return;
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const body = JSON.stringify({
    error: {
      code: SimErrorCode.BadRequest,
      message: tooLarge ? 'Request headers too large.' : 'Malformed HTTP request.',
    },
    meta: { requestId: newId('req_') },
  });
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** JSON only. An empty body is "no body" (lifecycle POSTs often send none); bad JSON is 400 INVALID_JSON. */
function installBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new SimError(400, SimErrorCode.InvalidJson, 'Request body is not valid JSON.'), undefined);
    }
  });
}

/**
 * Fastify stops reading an over-long body and closes the connection after answering, so a client still
 * sending (a chunked 5 MB body) gets a broken pipe instead of the 413. Read and discard the rest first,
 * up to a bound, so the client finishes its request and reads the answer in the envelope.
 */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
function afterBodyDrained(request: FastifyRequest, answer: () => void): void {
  const raw = request.raw;
  if (raw.complete || raw.readableEnded) {
    answer();
    return;
  }
  let drained = 0;
  raw.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) raw.destroy();
  });
  raw.once('end', answer);
  raw.resume();
}

/** Every failure leaves in the envelope with a code; Fastify's own errors are mapped, never a stack trace. */
function answerError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof SimError) {
    sendError(reply, error.status, error.code, error.message, error.headers);
    return;
  }
  const fastifyError = error as Partial<FastifyError>;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      afterBodyDrained(request, () =>
        sendError(reply, 413, SimErrorCode.PayloadTooLarge, `Request body exceeds ${BODY_LIMIT_BYTES} bytes.`),
      );
      return;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      sendError(
        reply,
        415,
        SimErrorCode.UnsupportedMediaType,
        'Request bodies must be JSON (Content-Type: application/json).',
      );
      return;
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    sendError(reply, status, SimErrorCode.BadRequest, `Bad request: ${fastifyError.message ?? 'invalid request'}`);
    return;
  }
  request.log.error({ err: error }, 'simulator bug');
  sendError(reply, 500, SimErrorCode.InternalError, 'Internal simulator error.');
}

/**
 * Stats, the global rate limit, latency and faults for API calls (not admin routes). Faults that answer do so
 * before any handler runs, so nothing changes; drop-after-commit only marks the request.
 */
async function applyTraffic(sim: SimRuntime, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const path = request.url.split('?')[0] ?? '';
  if (path !== API_PREFIX && !path.startsWith(`${API_PREFIX}/`)) return undefined;
  const apiPath = path.slice(API_PREFIX.length) || '/';
  const template = request.routeOptions.url;
  sim.traffic.record(
    template ? `${request.method} ${template.slice(API_PREFIX.length)}` : 'unmatched',
    performance.now(),
  );

  if (sim.rateLimiter) {
    const slot = sim.rateLimiter.tryAcquire(performance.now());
    if (!slot.ok) {
      sim.traffic.countRateLimited();
      sendError(reply, 429, SimErrorCode.RateLimited, 'Rate limit exceeded.', {
        'Retry-After': String(slot.retryAfterSeconds),
      });
      return reply;
    }
  }

  const plan = sim.faults.plan(request.method, apiPath);
  const delayMs = sim.latencyMs + plan.delayMs;
  if (delayMs > 0) await sleep(delayMs);
  const fault = plan.terminal;
  if (!fault) return undefined;
  sim.traffic.countFault();
  if (fault.mode === 'drop-after-commit') {
    markDropAfterCommit(request);
    return undefined;
  }
  const headers: Record<string, string> =
    fault.mode === 'rate-limit' || fault.status === 429 || fault.status === 503
      ? { 'Retry-After': String(fault.retryAfterSeconds) }
      : {};
  sendError(reply, fault.status, fault.code, fault.message, headers);
  return reply;
}
