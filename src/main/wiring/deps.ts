import type { ActivityDeps } from '../../../activities/index.js';
import type { Config } from '../../config/index.js';
import { ConfigError } from '../../config/index.js';
import { createLogger, type Logger } from '../../infra/log.js';
import type { Pool } from '../../db/pool.js';
import { createPlatformClient, type PlatformClient, type PlatformKeyProvider } from '../../platform/index.js';
import { parseMasterKeys } from '../../secrets/master-keys.js';
import { safeOpsOf } from './safe-ops.js';
import { createVault } from '../../secrets/vault.js';
import { NoParentKeyError, startParentKeySource, type ParentKeySource } from '../../secrets/parent-key-source.js';
import { masterKeysOf } from './data-converter.js';
import { createRequestPacer } from '../../db/request-pacer.js';

/** What the worker cannot run without; every missing piece is reported at once. */
export function requireWorkerConfig(config: Config): asserts config is Config & {
  DATABASE_URL: string;
  PLATFORM_BASE_URL: string;
  SECRETS_KEYS: string;
} {
  const problems: string[] = [];
  if (!config.DATABASE_URL) problems.push('DATABASE_URL: is required for the worker');
  if (!config.PLATFORM_BASE_URL)
    problems.push('PLATFORM_BASE_URL: is required for the worker (the platform API base ending in /api/v1)');
  if (!config.SECRETS_KEYS)
    problems.push(
      'SECRETS_KEYS: is required for the worker (tenant key secrets are sealed with ' +
        'it); generate one with `npx tenantctl secrets generate-key`',
    );
  if (problems.length) throw new ConfigError(problems);
}

/** A platform client from the configuration (tenantctl's and the gateway's read-only preflight). */
export function buildActivityDeps(
  config: Config & { PLATFORM_BASE_URL: string; SECRETS_KEYS: string },
  pool: Pool,
  logger: Logger = createLogger({ level: config.LOG_LEVEL }),
  /** The parent's platform key as read from our records (parent-key-source.ts). */
  platformKey: PlatformKeyProvider | string,
): ActivityDeps {
  return {
    pool,
    platform: createPlatformClient({
      baseUrl: config.PLATFORM_BASE_URL,
      platformKey,
      timeoutMs: config.PLATFORM_TIMEOUT_MS,
      // Every request of every worker and gateway within one shared budget (migration 0017).
      pace: createRequestPacer(pool, config.PLATFORM_RATE_LIMIT_PER_SECOND),
    }),
    vault: createVault(parseMasterKeys(config.SECRETS_KEYS)),
    logger,
    lifecycle: {
      resumeBalanceFloorMicroUsd: config.RESUME_BALANCE_FLOOR_MICRO_USD,
      // The gateway's policy, held by every close run too (a start in the Web UI included).
      closeDelay: safeOpsOf(config).closeDelay,
    },
    transfers: { maxMicroUsd: config.TRANSFER_MAX_MICRO_USD },
    platformRequestsPerSecond: config.PLATFORM_RATE_LIMIT_PER_SECOND,
    platformTenantKeyLimit: config.PLATFORM_TENANT_KEY_LIMIT,
    // The same policy the gateway applies: a resolveTransfer it gates is checked by the run too.
    approvals: { actions: safeOpsOf(config).approvals },
    events: {
      retentionDays: config.EVENTS_RETENTION_DAYS,
      ...(config.EVENTS_LOW_BALANCE_MICRO_USD ? { lowBalanceMicroUsd: config.EVENTS_LOW_BALANCE_MICRO_USD } : {}),
    },
  };
}

/**
 * The parent's platform key of a long-running process (worker, gateway): read from our sealed records, imported
 * from PLATFORM_API_KEY on first start, refreshed every PARENT_KEY_REFRESH_MS and at once on a 401, and reported
 * as this process's credential (a parent key rotation waits for every live process to switch).
 */
export async function startParentKeyOf(
  config: Config,
  pool: Pool,
  kind: 'worker' | 'gateway' | 'cli',
  logger?: Logger,
  /** The worker cannot run without a key; the gateway only reports which one it holds. */
  required = true,
  /** false: never import PLATFORM_API_KEY (a read-only command writes nothing, not even the bootstrap). */
  importBootstrap = true,
): Promise<ParentKeySource> {
  const keys = masterKeysOf(config);
  if (!keys) throw new ConfigError(['SECRETS_KEYS: is required (the parent platform key is sealed with it)']);
  const source = await startParentKeySource({
    pool,
    vault: createVault(keys),
    refreshMs: config.PARENT_KEY_REFRESH_MS,
    bootstrap: importBootstrap ? config.PLATFORM_API_KEY : undefined,
    ...(kind === 'cli' ? {} : { report: { kind } }),
    onError: (error) => logger?.warn({ err: error }, 'parent key refresh failed; keeping the cached key'),
  });
  if (required && !source.current()) {
    await source.close();
    throw new NoParentKeyError(
      'no parent platform key in our records: set PLATFORM_API_KEY (imported on first ' +
        'start) or run `tenantctl parent-key import`',
    );
  }
  return source;
}

/**
 * The parent key of a one-shot CLI command: from our records (PLATFORM_API_KEY imported when none is there yet),
 * refreshed on a 401 like every process. A read-only command (a dry run, a plan, a project check) uses the
 * recorded key, else the variable as it is: it imports nothing. `close()` when done.
 */
export async function cliParentKeyOf(
  config: Config,
  pool: Pool,
  options: { readOnly?: boolean } = {},
): Promise<{ platformKey: string | PlatformKeyProvider; close(): Promise<void> }> {
  const source = await startParentKeyOf(config, pool, 'cli', undefined, !options.readOnly, !options.readOnly);
  const platformKey = source.current() ? source : config.PLATFORM_API_KEY;
  if (!platformKey) {
    await source.close();
    throw new ConfigError([
      'PLATFORM_API_KEY: no parent platform key in our records and none set (`tenantctl parent-key import`)',
    ]);
  }
  return { platformKey, close: () => source.close() };
}

/** The platform client of a one-shot CLI command, with `cliParentKeyOf`'s key. `close()` when done. */
export async function cliPlatformClientOf(
  config: Config,
  pool: Pool,
  options: { readOnly?: boolean } = {},
): Promise<{ platform: PlatformClient; close(): Promise<void> }> {
  const problems: string[] = [];
  if (!config.PLATFORM_BASE_URL) problems.push('PLATFORM_BASE_URL: is required to call the platform');
  if (!masterKeysOf(config)) problems.push('SECRETS_KEYS: is required (the parent platform key is sealed with it)');
  if (problems.length) throw new ConfigError(problems);
  const { platformKey, close } = await cliParentKeyOf(config, pool, options);
  return {
    platform: createPlatformClient({
      baseUrl: config.PLATFORM_BASE_URL!,
      platformKey,
      timeoutMs: config.PLATFORM_TIMEOUT_MS,
    }),
    close,
  };
}
