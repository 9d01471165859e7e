import { NativeConnection } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities, type Activities } from '../../activities/index.js';
import type { DriftOptions } from '../../activities/drift/options.js';
import type { RotationOptions } from '../../activities/keys/rotation-options.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformActivityWorker } from '../../src/main/wiring/platform-worker.js';
import { createPlatformClient, type PlatformClient } from '../../src/platform/index.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { DEFAULT_PLATFORM_KEY } from '../../src/sim/index.js';
import { createVault } from '../../src/secrets/vault.js';
import type { OrchestratorEnv } from './onboarding-env.js';

export interface PlatformQueueWorker {
  platform: PlatformClient;
  activities: Activities;
  stop(): Promise<void>;
}

/**
 * The rate-limited platform-queue worker beside a test file's main worker (drift's and the auto
 * top-up sweep's platform reads run there), with activities over the same database and simulator,
 * built as the production worker builds them.
 */
export async function startPlatformQueueWorker(
  env: Pick<OrchestratorEnv, 'pool' | 'sim' | 'taskQueue' | 'secretsKeys'>,
  options: { requestsPerSecond?: number; drift?: DriftOptions; rotation?: RotationOptions } = {},
): Promise<PlatformQueueWorker> {
  const platform = createPlatformClient({
    baseUrl: env.sim.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    timeoutMs: 2_000,
  });
  const activities = createActivities({
    pool: env.pool,
    platform,
    vault: createVault(parseMasterKeys(env.secretsKeys)),
    logger: createLogger({ level: 'silent' }),
    ...(options.drift ? { drift: options.drift } : {}),
    ...(options.rotation ? { rotation: options.rotation } : {}),
  });
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await createPlatformActivityWorker({
    connection,
    namespace: inject('temporalNamespace'),
    taskQueue: env.taskQueue,
    activities,
    requestsPerSecond: options.requestsPerSecond ?? 200,
  });
  const running = worker.run();
  return {
    platform,
    activities,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
