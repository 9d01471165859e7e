import type { Client } from '@temporalio/client';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { createPool, type Pool } from '../db/pool.js';
import { buildGatewayApp } from '../gateway/app.js';
import { gatewayOptionsOf } from '../gateway/options.js';
import { loggerOf } from '../log.js';
import { createEncryptionCodec } from '../secrets/payload-codec.js';
import { createVault } from '../secrets/vault.js';
import { connectClient } from '../temporal/connection.js';
import { dataConverterOf, masterKeysOf } from '../worker/deps.js';

export interface RunningGateway {
  /** `http://host:port` it listens on. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Starts the gateway process: refuses an out-of-date schema, connects to Temporal with the shared data
 * converter, listens, and runs the inbox sweeper (deliveries whose workflow start failed are retried).
 */
export async function startGateway(config: Config): Promise<RunningGateway> {
  const gatewayEnv = config;
  const keys = masterKeysOf(config);
  const problems: string[] = [];
  if (!config.DATABASE_URL) problems.push('DATABASE_URL: is required for the gateway');
  if (!keys) problems.push('SECRETS_KEYS: is required for the gateway (webhook secrets are sealed with it)');
  if (problems.length > 0) throw new ConfigError(problems);
  const logger = loggerOf(config);
  const pool: Pool = createPool(config.DATABASE_URL!, { applicationName: 'tenant-orchestrator-gateway', max: 20 });
  let client: Client | undefined;
  try {
    await assertSchemaCurrent(pool);
    client = await connectClient(config, dataConverterOf(config));
    const options = gatewayOptionsOf(gatewayEnv, config.TEMPORAL_TASK_QUEUE);
    const { app, dispatcher } = buildGatewayApp({ pool, client, vault: createVault(keys!), codec: createEncryptionCodec(keys!), options, logger });
    await app.listen({ port: gatewayEnv.GATEWAY_PORT, host: gatewayEnv.GATEWAY_HOST });
    dispatcher.startSweeper();
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : gatewayEnv.GATEWAY_PORT;
    const host = gatewayEnv.GATEWAY_HOST.includes(':') ? `[${gatewayEnv.GATEWAY_HOST}]` : gatewayEnv.GATEWAY_HOST;
    if (options.apiTokens.length === 0) logger.warn('GATEWAY_API_TOKENS is not set: every /v1 call is refused with 401');
    const connection = client.connection;
    return {
      url: `http://${host}:${port}`,
      port,
      close: async () => {
        await app.close();
        await connection.close();
        await pool.end();
      },
    };
  } catch (error) {
    await client?.connection.close().catch(() => undefined);
    await pool.end();
    throw error;
  }
}
