import type { DataConverter } from '@temporalio/common';
import type { ActivityDeps } from '../../../activities/index.js';
import type { Config } from '../../config.js';
import { ConfigError } from '../../config.js';
import { createLogger, type Logger } from '../../infra/log.js';
import type { Pool } from '../../db/pool.js';
import { createPlatformClient } from '../../platform/index.js';
import { parseMasterKeys, type MasterKeyRing } from '../../secrets/master-keys.js';
import { createDataConverter } from '../../secrets/payload-codec.js';
import { createVault } from '../../secrets/vault.js';

/** What the worker cannot run without; every missing piece is reported at once. */
export function requireWorkerConfig(config: Config): asserts config is Config & {
  DATABASE_URL: string;
  PLATFORM_BASE_URL: string;
  PLATFORM_API_KEY: string;
  SECRETS_KEYS: string;
} {
  const problems: string[] = [];
  if (!config.DATABASE_URL) problems.push('DATABASE_URL: is required for the worker');
  if (!config.PLATFORM_BASE_URL)
    problems.push('PLATFORM_BASE_URL: is required for the worker (the platform API base ending in /api/v1)');
  if (!config.PLATFORM_API_KEY)
    problems.push('PLATFORM_API_KEY: is required for the worker (the parent platform key, svpk_...)');
  if (!config.SECRETS_KEYS)
    problems.push(
      'SECRETS_KEYS: is required for the worker (tenant key secrets are sealed with it); generate one with `npx tenantctl secrets generate-key`',
    );
  if (problems.length) throw new ConfigError(problems);
}

export function masterKeysOf(config: Pick<Config, 'SECRETS_KEYS'>): MasterKeyRing | undefined {
  return config.SECRETS_KEYS ? parseMasterKeys(config.SECRETS_KEYS) : undefined;
}

/** The one data converter of client, worker and CLI: encrypted payloads whenever keys are configured. */
export function dataConverterOf(config: Pick<Config, 'SECRETS_KEYS' | 'PAYLOAD_CODEC'>): DataConverter | undefined {
  if (config.PAYLOAD_CODEC === 'off') return undefined;
  const keys = masterKeysOf(config);
  if (!keys && config.PAYLOAD_CODEC === 'on')
    throw new ConfigError(['PAYLOAD_CODEC: is on but SECRETS_KEYS is not set']);
  return keys ? createDataConverter(keys) : undefined;
}

export function buildActivityDeps(
  config: Config & { PLATFORM_BASE_URL: string; PLATFORM_API_KEY: string; SECRETS_KEYS: string },
  pool: Pool,
  logger: Logger = createLogger({ level: config.LOG_LEVEL }),
): ActivityDeps {
  return {
    pool,
    platform: createPlatformClient({
      baseUrl: config.PLATFORM_BASE_URL,
      platformKey: config.PLATFORM_API_KEY,
      timeoutMs: config.PLATFORM_TIMEOUT_MS,
    }),
    vault: createVault(parseMasterKeys(config.SECRETS_KEYS)),
    logger,
    lifecycle: { resumeBalanceFloorMicroUsd: config.RESUME_BALANCE_FLOOR_MICRO_USD },
    ...(config.EVENTS_LOW_BALANCE_MICRO_USD
      ? { events: { lowBalanceMicroUsd: config.EVENTS_LOW_BALANCE_MICRO_USD } }
      : {}),
  };
}
