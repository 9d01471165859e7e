import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Pool } from '../client/records.js';
import type { Logger } from '../infra/log.js';
import type { Vault } from '../secrets/vault.js';
import { installAccessControl, PUBLIC, type DeclaredRoute } from './http/access.js';
import { createTokenSet } from './http/auth.js';
import { registerCodecRoutes } from './codec/codec-routes.js';
import {
  createDeliveryDispatcher,
  temporalDeliveryStarter,
  type DeliveryDispatcher,
} from './webhooks/delivery-dispatcher.js';
import { answerError, GatewayErrorCode, newRequestId, sendError } from './http/errors.js';
import { registerHealthRoutes, registerLiveness } from './ops/health-routes.js';
import { createInboxPruner, type InboxPruner } from './webhooks/inbox-pruner.js';
import { installJsonBodyParser, installParameterTextGuard } from './http/json-body.js';
import { createGatewayMetrics, type GatewayMetrics } from './http/metrics.js';
import { doc, installApiDocs } from './http/api-docs.js';
import type { GatewayOptions } from './options.js';
import { registerTenantRoutes } from './tenants/tenant-routes.js';
import { registerTransferRoutes } from './money/transfer-routes.js';
import { registerFundingRoutes } from './money/funding-routes.js';
import { registerPlanRoutes } from './plans/plan-routes.js';
import { registerWalletRoutes } from './money/wallet-routes.js';
import { registerKeySlotRoutes } from './keys/key-slot-routes.js';
import { registerWebhookReceiver } from './webhooks/webhook-receiver.js';
import { registerEventRoutes } from './events/event-routes.js';
import { createSecretResolver } from '../secrets/webhook-secrets.js';
import { registerApprovalRoutes } from './approvals/approval-routes.js';
import { registerWebhookRoutes } from './webhooks/webhook-routes.js';
import { registerParentKeyRoutes } from './parent-key/parent-key-routes.js';
import { registerImportRoutes } from './imports/import-routes.js';
import { registerDecisionRoutes } from './runs/decision-routes.js';
import { registerRunDecisionRoutes } from './http/run-decisions.js';
import { registerRotationRoutes } from './keys/rotation-routes.js';
import { registerDriftRoutes } from './drift/drift-routes.js';
import { registerFundingFleetRoutes } from './money/funding-fleet-routes.js';

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

function registerRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  dispatcher: DeliveryDispatcher,
  metrics: GatewayMetrics,
): void {
  const { options } = deps;
  if (deps.opsRoutes === false) registerLiveness(app);
  else registerHealthRoutes(app, { pool: deps.pool, client: deps.client, metrics });
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
  registerTenantRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    publicUrl: options.publicUrl,
    deployers: options.deployers,
    closeDelay: options.closeDelay,
    platform: options.preflightPlatform,
    maxTransferMicroUsd: options.maxTransferMicroUsd,
    tenantKeyLimit: options.tenantKeyLimit,
    resumeBalanceFloorMicroUsd: options.resumeBalanceFloorMicroUsd,
    vault: deps.vault,
  });
  registerTransferRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    publicUrl: options.publicUrl,
    maxTransferMicroUsd: options.maxTransferMicroUsd,
  });
  registerFundingRoutes(app, { pool: deps.pool, maxTransferMicroUsd: options.maxTransferMicroUsd });
  registerWalletRoutes(app, { pool: deps.pool, platform: options.preflightPlatform });
  const decisions = {
    pool: deps.pool,
    client: deps.client,
    transferApproval: {
      gated: options.approvals.actions.has('resolveTransfer'),
      ttlMs: options.approvals.ttlMs,
    },
  };
  registerPlanRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    maxTransferMicroUsd: options.maxTransferMicroUsd,
    tenantKeyLimit: options.tenantKeyLimit,
    decisions,
  });
  registerApprovalRoutes(app, { pool: deps.pool, client: deps.client });
  registerRunDecisionRoutes(app, decisions);
  registerDecisionRoutes(app, decisions);
  registerRotationRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    publicUrl: options.publicUrl,
    deployers: options.deployers,
    decisions,
  });
  registerDriftRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    scheduleEvery: options.driftScheduleEvery,
  });
  registerFundingFleetRoutes(app, { pool: deps.pool, client: deps.client, taskQueue: options.taskQueue });
  registerKeySlotRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    vault: deps.vault,
    revealApproval: {
      gated: options.approvals.actions.has('keyReveal'),
      ttlMs: options.approvals.ttlMs,
    },
    taskQueue: options.taskQueue,
    publicUrl: options.publicUrl,
    decisions,
  });
  registerEventRoutes(app, {
    pool: deps.pool,
    vault: deps.vault,
    client: deps.client,
    taskQueue: options.taskQueue,
    allowHosts: options.outboundAllowHosts,
    resolve: options.outboundResolve,
    policy: options.events,
  });
  registerWebhookRoutes(app, {
    pool: deps.pool,
    vault: deps.vault,
    publicUrl: options.publicUrl,
    platform: options.webhookPlatform,
    projectOwner: options.preflightPlatform,
  });
  registerParentKeyRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    platform: options.preflightPlatform,
    decisions,
  });
  registerImportRoutes(app, {
    pool: deps.pool,
    client: deps.client,
    taskQueue: options.taskQueue,
    lister: options.importLister,
  });
  registerCodecRoutes(app, {
    codec: deps.codec,
    tokens: createTokenSet(options.codecTokens),
    corsOrigins: options.codecCorsOrigins,
    hosts: options.codecHosts,
  });
  registerWebhookReceiver(app, {
    pool: deps.pool,
    secrets: createSecretResolver({
      pool: deps.pool,
      vault: deps.vault,
      graceSeconds: options.webhookSecretGraceSeconds,
    }),
    dispatcher,
    metrics,
    bodyLimitBytes: options.webhookBodyLimitBytes,
    toleranceSeconds: options.webhookToleranceSeconds,
  });
}
