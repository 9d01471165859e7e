import { Client, Connection, type DataConverter } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
// Type only: the worker package (native bridge) loads when a NativeConnection is opened, never for the CLI's client.
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../config/index.js';
import { TEMPORAL_ADDRESS_FALLBACK } from '../config/defaults.js';

/**
 * Temporal connections configured the way Temporal users expect: TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_* and envconfig profiles
 * (TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE), all through @temporalio/envconfig.
 */
export class TemporalUnreachableError extends Error {
  override name = 'TemporalUnreachableError';
}

function connectOptions(config: Pick<Config, 'temporalEnv' | 'TEMPORAL_NAMESPACE'>) {
  const { connectionOptions, namespace } = loadClientConnectConfig({ overrideEnvVars: config.temporalEnv });
  return {
    connectionOptions: { address: TEMPORAL_ADDRESS_FALLBACK, ...connectionOptions },
    namespace: namespace ?? config.TEMPORAL_NAMESPACE,
  };
}

function unreachable(address: string, error: unknown): TemporalUnreachableError {
  const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
  return new TemporalUnreachableError(`cannot reach Temporal at ${address}: ${reason}`);
}

export async function connectClient(
  config: Pick<Config, 'temporalEnv' | 'TEMPORAL_NAMESPACE'>,
  dataConverter?: DataConverter,
): Promise<Client> {
  const { connectionOptions, namespace } = connectOptions(config);
  try {
    const connection = await Connection.connect({ ...connectionOptions, connectTimeout: 5_000 });
    return new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}) });
  } catch (error) {
    throw unreachable(String(connectionOptions.address), error);
  }
}

export async function connectNative(
  config: Pick<Config, 'temporalEnv' | 'TEMPORAL_NAMESPACE'>,
): Promise<{ connection: NativeConnection; namespace: string }> {
  const { connectionOptions, namespace } = connectOptions(config);
  const { NativeConnection } = await import('@temporalio/worker');
  try {
    const connection = await NativeConnection.connect(connectionOptions);
    return { connection, namespace };
  } catch (error) {
    throw unreachable(String(connectionOptions.address), error);
  }
}
