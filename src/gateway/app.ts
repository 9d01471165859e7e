import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Pool } from '../client/records.js';
import type { Logger } from '../infra/log.js';
import type { Vault } from '../secrets/vault.js';
import { installAccessControl, PUBLIC, type DeclaredRoute } from './http/access.js';
import { createTokenSet } from './http/auth.js';
import {
  createDeliveryDispatcher,
  temporalDeliveryStarter,
  type DeliveryDispatcher,
} from './webhooks/delivery-dispatcher.js';
import { answerError, GatewayErrorCode, newRequestId, sendError } from './http/errors.js';
import { createInboxPruner, type InboxPruner } from './webhooks/inbox-pruner.js';
import { installJsonBodyParser, installParameterTextGuard } from './http/json-body.js';
import { createGatewayMetrics, type GatewayMetrics } from './http/metrics.js';
import { doc, installApiDocs } from './http/api-docs.js';
import type { GatewayOptions } from './options.js';
import { approvalRoutes } from './approvals/approval-routes.js';
import { codecRoutes } from './codec/codec-routes.js';
import { driftRoutes } from './drift/drift-routes.js';
import { eventRoutes } from './events/event-routes.js';
import { importRoutes } from './imports/import-routes.js';
import { keysArea } from './keys/index.js';
import { moneyArea } from './money/index.js';
import { opsRoutes } from './ops/health-routes.js';
import { parentKeyRoutes } from './parent-key/parent-key-routes.js';
import { planRoutes } from './plans/plan-routes.js';
import { decisionRoutes } from './runs/decision-routes.js';
import { tenantRoutes } from './tenants/tenant-routes.js';
import { webhooksArea } from './webhooks/index.js';
import { createSecretResolver } from '../secrets/webhook-secrets.js';

/**
 * The gateway's Fastify app, built without listening (tests use `inject`; `startGateway` listens).
 * Routes: /v1/tenants… (signup backends), /webhooks/registry/:id (the platform), /codec/* (the Web UI),
 * /healthz, /readyz, /metrics, /openapi.json. Closing the app stops the delivery dispatcher.
 */
export interface GatewayDeps {
  pool: Pool;
  /** A Temporal client with the shared data converter (the payload codec when keys are configured). */
  client: Client;
  /** Opens webhook signing secrets. */
  vault: Vault;
  /** The payload codec served at /codec; undefined answers 503 CODEC_NOT_CONFIGURED. */
  codec: PayloadCodec | undefined;
  options: GatewayOptions;
  logger?: Logger;
  /** Default: starts handleRegistryEvent on `client`. Tests pass one with a failing starter. */
  dispatcher?: DeliveryDispatcher;
  metrics?: GatewayMetrics;
  /** false: /readyz and /metrics are served by a separate ops listener (GATEWAY_OPS_PORT), not here. */
  opsRoutes?: boolean;
}

export interface GatewayApp {
  app: FastifyInstance;
  dispatcher: DeliveryDispatcher;
  /** Runs on an interval once the app listens (inject-only tests call pruneOnce themselves). */
  pruner: InboxPruner;
  metrics: GatewayMetrics;
  /** Every route with the permission it declared (the route table tests walk it). */
  routes: readonly DeclaredRoute[];
}

export function buildGatewayApp(deps: GatewayDeps): GatewayApp {
  const { options, logger } = deps;
  const metrics = deps.metrics ?? createGatewayMetrics();
  const dispatcher =
    deps.dispatcher ??
    createDeliveryDispatcher({
      pool: deps.pool,
      start: temporalDeliveryStarter(deps.client, options.taskQueue),
      metrics,
      ...(logger ? { logger } : {}),
    });

  const loggerInstance: FastifyBaseLogger | undefined = logger?.child({ component: 'gateway' });
  const app: FastifyInstance = Fastify({
    ...(loggerInstance ? { loggerInstance } : { logger: false }),
    // Per-request logs at 1,000 deliveries/s would swamp the log; /metrics counts every request instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024,
    genReqId: newRequestId,
    requestIdHeader: false,
    forceCloseConnections: true,
    return503OnClosing: true,
  });

  installJsonBodyParser(app);
  installParameterTextGuard(app);
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('X-Request-Id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  app.setErrorHandler((error, request, reply) => answerError(logger, error, request, reply));
  app.setNotFoundHandler((request, reply) => {
    void sendError(
      reply,
      404,
      GatewayErrorCode.ROUTE_NOT_FOUND,
      `No route for ${request.method} ${request.url.split('?')[0]}.`,
    );
  });

  const routes = installAccessControl(app, {
    backendTokens: createTokenSet(options.apiTokens),
    identities: options.operators,
  });
  // The document generator collects routes as they are added: it loads first, the routes after it.
  installApiDocs(app);
  void app.register(async (app) => registerRoutes(app, deps, dispatcher, metrics));

  const pruner = createInboxPruner({
    pool: deps.pool,
    retentionSeconds: options.webhookInboxRetentionSeconds,
    ...(logger ? { logger } : {}),
  });
  app.addHook('onListen', async () => pruner.start());
  app.addHook('onClose', async () => {
    await pruner.stop();
    await dispatcher.stop();
  });
  return { app, dispatcher, pruner, metrics, routes };
}

/**
 * The areas, each one encapsulated plugin under its prefix (its routes' paths are relative to it); the error
 * handler, the body parser, access control and the document generator on the root apply to every one.
 */
async function registerRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  dispatcher: DeliveryDispatcher,
  metrics: GatewayMetrics,
): Promise<void> {
  const { options, pool, client, vault } = deps;
  await app.register(opsRoutes, { pool, client, metrics, livenessOnly: deps.opsRoutes === false });
  app.get(
    '/openapi.json',
    {
      config: { permission: PUBLIC },
      schema: doc({
        summary: 'This document (OpenAPI 3.1), generated from the routes',
        answers: { 200: { description: 'The OpenAPI document.', raw: { type: 'object' } } },
      }),
    },
    async () => app.swagger(),
  );
  const v1 = { prefix: '/v1', pool, client, taskQueue: options.taskQueue, publicUrl: options.publicUrl };
  const maxTransferMicroUsd = options.maxTransferMicroUsd;
  const decisions = {
    pool,
    client,
    transferApproval: {
      gated: options.approvals.actions.has('resolveTransfer'),
      ttlMs: options.approvals.ttlMs,
    },
  };
  await app.register(tenantRoutes, {
    ...v1,
    deployers: options.deployers,
    closeDelay: options.closeDelay,
    platform: options.preflightPlatform,
    maxTransferMicroUsd,
    tenantKeyLimit: options.tenantKeyLimit,
    resumeBalanceFloorMicroUsd: options.resumeBalanceFloorMicroUsd,
    vault,
  });
  await app.register(moneyArea, { ...v1, maxTransferMicroUsd, platform: options.preflightPlatform });
  await app.register(planRoutes, { ...v1, maxTransferMicroUsd, tenantKeyLimit: options.tenantKeyLimit, decisions });
  await app.register(approvalRoutes, { prefix: '/v1/approvals', pool, client });
  await app.register(decisionRoutes, { prefix: '/v1', ...decisions });
  await app.register(driftRoutes, { ...v1, prefix: '/v1/drift', scheduleEvery: options.driftScheduleEvery });
  await app.register(keysArea, {
    ...v1,
    deployers: options.deployers,
    vault,
    revealApproval: {
      gated: options.approvals.actions.has('keyReveal'),
      ttlMs: options.approvals.ttlMs,
    },
    decisions,
  });
  await app.register(eventRoutes, {
    ...v1,
    vault,
    allowHosts: options.outboundAllowHosts,
    resolve: options.outboundResolve,
    policy: options.events,
  });
  await app.register(parentKeyRoutes, {
    ...v1,
    prefix: '/v1/parent-key',
    platform: options.preflightPlatform,
    decisions,
  });
  await app.register(importRoutes, { ...v1, prefix: '/v1/imports', lister: options.importLister });
  await app.register(codecRoutes, {
    prefix: '/codec',
    codec: deps.codec,
    tokens: createTokenSet(options.codecTokens),
    corsOrigins: options.codecCorsOrigins,
    hosts: options.codecHosts,
  });
  await app.register(webhooksArea, {
    pool,
    vault,
    publicUrl: options.publicUrl,
    platform: options.webhookPlatform,
    projectOwner: options.preflightPlatform,
    secrets: createSecretResolver({ pool, vault, graceSeconds: options.webhookSecretGraceSeconds }),
    dispatcher,
    metrics,
    bodyLimitBytes: options.webhookBodyLimitBytes,
    toleranceSeconds: options.webhookToleranceSeconds,
  });
}
