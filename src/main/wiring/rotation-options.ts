import type { RotationOptions } from '../../../activities/keys/rotation-options.js';
import type { RotationConfig } from '../../config/rotation.js';
import { createPlatformClient, type PlatformKeyProvider } from '../../platform/index.js';

/**
 * The rotation activities' options from the configuration (the worker's wiring). Not beside the
 * configuration's shape in activities/rotation-options.ts: the configuration, which every tenantctl
 * command loads, then does not load the platform client.
 */
export function buildRotationOptions(
  config: RotationConfig & { PLATFORM_BASE_URL: string; PLATFORM_TIMEOUT_MS: number },
  /** The parent's platform key: our sealed records (a provider), or a fixed key. */
  platformKey: PlatformKeyProvider | string,
  /** The shared platform request budget (src/db/request-pacer.ts). */
  pace?: () => Promise<void>,
): RotationOptions {
  const paths = {
    ...(config.ROTATION_ENV_VARS_GET_PATH ? { getEnvVars: config.ROTATION_ENV_VARS_GET_PATH } : {}),
    ...(config.ROTATION_ENV_VARS_PUT_PATH ? { putEnvVars: config.ROTATION_ENV_VARS_PUT_PATH } : {}),
  };
  return {
    defaultDeployer: config.ROTATION_DEPLOYER,
    envVariable: config.ROTATION_ENV_VAR,
    ...(config.ROTATION_NOTIFY_URL && config.ROTATION_NOTIFY_SECRET
      ? {
          notify: {
            url: config.ROTATION_NOTIFY_URL,
            secret: config.ROTATION_NOTIFY_SECRET,
            timeoutMs: config.PLATFORM_TIMEOUT_MS,
          },
        }
      : {}),
    ...(Object.keys(paths).length
      ? {
          envVarsPlatform: createPlatformClient({
            baseUrl: config.PLATFORM_BASE_URL,
            platformKey,
            timeoutMs: config.PLATFORM_TIMEOUT_MS,
            paths,
            ...(pace ? { pace } : {}),
          }),
        }
      : {}),
  };
}
