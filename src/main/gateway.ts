import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { ConfigError, reportConfigWarnings, type Config } from '../config/index.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { createPool, type Pool } from '../db/pool.js';
import { buildGatewayApp } from '../gateway/app.js';
import { opsRoutes } from '../gateway/ops/health-routes.js';
import { gatewayOptionsOf } from './wiring/gateway-options.js';
import { loggerOf } from '../infra/log.js';
import { createEncryptionCodec } from '../secrets/payload-codec.js';
import { createVault } from '../secrets/vault.js';
import { connectClient } from '../client/connection.js';
import { dataConverterOf, masterKeysOf } from './wiring/data-converter.js';
import { startParentKeyOf } from './wiring/deps.js';
import type { ParentKeySource } from '../secrets/parent-key-source.js';
import { createPlatformClient } from '../platform/index.js';
import { createRequestPacer } from '../db/request-pacer.js';
import { createDriftListClient } from '../../activities/drift/paced-fetch.js';

export interface RunningGateway {
  /** `http://host:port` it listens on. */
  url: string;
  port: number;
  /** The ops listener (/healthz, /readyz, /metrics) when GATEWAY_OPS_PORT is set. */
  opsUrl?: string;
  close(): Promise<void>;
}

function urlOf(app: FastifyInstance, host: string, fallbackPort: number): { url: string; port: number } {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : fallbackPort;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, port };
}

/**
 * Starts the gateway process: refuses an out-of-date schema, connects to Temporal with the shared data
 * converter, listens, and runs the inbox sweeper (deliveries whose workflow start failed are retried).
 * With GATEWAY_OPS_PORT, /readyz and /metrics move to a listener of their own, so a deployment
 * publishes only the public routes and keeps the ops port on its internal network.
 */
export async function startGateway(config: Config): Promise<RunningGateway> {
  const logger = loggerOf(config);
  // Before refusing: a misspelt variable may be why a required one is missing.
  reportConfigWarnings(config, (message) => logger.warn(message));
  const keys = masterKeysOf(config);
  const problems: string[] = [];
  if (!config.DATABASE_URL) problems.push('DATABASE_URL: is required for the gateway');
  if (!keys) problems.push('SECRETS_KEYS: is required for the gateway (webhook secrets are sealed with it)');
  if (problems.length > 0) throw new ConfigError(problems);
  const pool: Pool = createPool(config.DATABASE_URL!, { applicationName: 'tenant-orchestrator-gateway', max: 20 });
  let client: Client | undefined;
  let ops: FastifyInstance | undefined;
  let listening: FastifyInstance | undefined;
  let parentKey: ParentKeySource | undefined;
  try {
    await assertSchemaCurrent(pool);
    // The gateway reports the parent key it holds like every process, so a rotation waits for it too.
    parentKey = await startParentKeyOf(config, pool, 'gateway', logger, false);
    client = await connectClient(config, dataConverterOf(config));
    // The gateway's platform requests share the workers' budget (migration 0017).
    const pace = createRequestPacer(pool, config.PLATFORM_RATE_LIMIT_PER_SECOND);
    const options = {
      ...gatewayOptionsOf(config, config.TEMPORAL_TASK_QUEUE),
      // The dry run's platform check uses the parent key this process holds (from our records).
      ...(config.PLATFORM_BASE_URL && parentKey.current()
        ? {
            preflightPlatform: createPlatformClient({
              baseUrl: config.PLATFORM_BASE_URL,
              platformKey: parentKey,
              timeoutMs: config.PLATFORM_TIMEOUT_MS,
              pace,
            }),
          }
        : {}),
      // Import plans list the fleet with the parent key, paced as drift's lister is.
      ...(config.PLATFORM_BASE_URL && parentKey.current()
        ? {
            importLister: createDriftListClient({
              baseUrl: config.PLATFORM_BASE_URL,
              platformKey: parentKey,
              timeoutMs: config.PLATFORM_TIMEOUT_MS,
              requestsPerSecond: config.PLATFORM_RATE_LIMIT_PER_SECOND,
              pace,
            }),
          }
        : {}),
      // Registry webhook management: the contract requires the parent's personal token, held here only.
      ...(config.PLATFORM_BASE_URL && config.PLATFORM_PERSONAL_TOKEN
        ? {
            webhookPlatform: createPlatformClient({
              baseUrl: config.PLATFORM_BASE_URL,
              personalToken: config.PLATFORM_PERSONAL_TOKEN,
              timeoutMs: config.PLATFORM_TIMEOUT_MS,
              pace,
            }),
          }
        : {}),
    };
    const withOps = config.GATEWAY_OPS_PORT !== undefined;
    const { app, dispatcher, metrics } = buildGatewayApp({
      pool,
      client,
      vault: createVault(keys!),
      codec: createEncryptionCodec(keys!),
      options,
      logger,
      opsRoutes: !withOps,
    });
    listening = app;
    await app.listen({ port: config.GATEWAY_PORT, host: config.GATEWAY_HOST });
    dispatcher.startSweeper();
    if (withOps) {
      ops = Fastify({ logger: false });
      await ops.register(opsRoutes, { pool, client, metrics });
      await ops.listen({ port: config.GATEWAY_OPS_PORT!, host: config.GATEWAY_OPS_HOST });
    }
    if (options.apiTokens.length === 0)
      logger.warn('GATEWAY_API_TOKENS is not set: every /v1 call is refused with 401');
    const connection = client.connection;
    const opsListener = ops;
    return {
      ...urlOf(app, config.GATEWAY_HOST, config.GATEWAY_PORT),
      ...(opsListener ? { opsUrl: urlOf(opsListener, config.GATEWAY_OPS_HOST, config.GATEWAY_OPS_PORT!).url } : {}),
      close: async () => {
        await opsListener?.close();
        await app.close();
        await connection.close();
        await parentKey?.close();
        await pool.end();
      },
    };
  } catch (error) {
    await ops?.close().catch(() => undefined);
    await listening?.close().catch(() => undefined);
    await client?.connection.close().catch(() => undefined);
    await parentKey?.close().catch(() => undefined);
    await pool.end();
    throw error;
  }
}
