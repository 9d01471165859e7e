import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { NativeConnection } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { revealKey } from '../../src/client/keys/reveal-key.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformClient, type PlatformClient } from '../../src/platform/index.js';
import { createPlatformActivityWorker } from '../../src/main/wiring/platform-worker.js';
import type { RotationOptions } from '../../activities/keys/rotation-options.js';
import { generateMasterKey, parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { startNotifyReceiver, type NotifyReceiver } from '../../src/main/stack/notify-receiver.js';
import { testOutbound } from './outbound.js';
import {
  DEFAULT_PLATFORM_KEY,
  startSimulator,
  type RunningSimulator,
  type SimulatorOptions,
} from '../../src/sim/index.js';
import {
  rotationStatusQuery,
  type RotationStage,
  type RotationStatus,
} from '../../workflows/keys/rotate-tenant-key-messages.js';
import { createTestContext, type TestContext } from './context.js';
import { orchestratorCliEnv } from './onboarding-env.js';
import { startOperatorGateway } from './operator-gateway.js';

/**
 * A test file's world for rotation: TestContext (database, task queue), a simulator, the worker on
 * the main queue AND the rate-limited platform-queue worker, and a local receiver for the notify
 * deployer that checks every signature.
 */
export interface RotationEnv extends TestContext {
  sim: RunningSimulator;
  platform: PlatformClient;
  notify: NotifyReceiver;
  logs: string[];
  cliEnv: Record<string, string>;
  onboard(externalRef: string): Promise<{ subaccountId: string; keyId: string }>;
  /** The current token of a slot, read back like an operator would (audited). */
  token(externalRef: string, slot?: string): Promise<string>;
}

type Acts = ReturnType<typeof createActivities>;

export async function createRotationEnv(
  label: string,
  simOptions: SimulatorOptions = {},
  rotation: Partial<RotationOptions> = {},
  /** Wraps the activities both workers run (a test's probe between two steps). */
  wrap: (activities: Acts) => Acts = (a) => a,
): Promise<RotationEnv> {
  const ctx = await createTestContext(label);
  const sim = await startSimulator(simOptions);
  const notify = await startNotifyReceiver();
  const secretsKeys = generateMasterKey(`t${randomBytes(3).toString('hex')}`);
  const logs: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({ write: (chunk, _e, done) => void (logs.push(String(chunk)), done()) }),
  });
  const platform = createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 2_000 });
  const vault = createVault(parseMasterKeys(secretsKeys));
  const rotationOptions: RotationOptions = {
    defaultDeployer: 'notify',
    envVariable: 'TENANT_API_KEY',
    notify: { url: notify.url, secret: notify.secret, timeoutMs: 2_000 },
    ...rotation,
  };
  const activities = wrap(
    createActivities({ pool: ctx.pool, platform, vault, logger, rotation: rotationOptions, outbound: testOutbound }),
  );
  await ctx.startWorker(activities);
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const platformWorker = await createPlatformActivityWorker({
    connection,
    namespace: inject('temporalNamespace'),
    taskQueue: ctx.taskQueue,
    activities,
    requestsPerSecond: 200,
  });
  const platformRun = platformWorker.run();

  // The gateway decides which deployers can run, as the worker is configured.
  const gateway = await startOperatorGateway(
    { ...ctx, secretsKeys },
    {
      gateway: {
        deployers: {
          defaultDeployer: rotationOptions.defaultDeployer,
          notifyConfigured: Boolean(rotationOptions.notify),
        },
      },
    },
  );
  return {
    ...ctx,
    sim,
    platform,
    notify,
    logs,
    // The CLI is configured as the worker is: it refuses a rotation whose deployer cannot run.
    cliEnv: {
      ...orchestratorCliEnv(ctx, sim, secretsKeys),
      ...gateway.cliEnv,
      ROTATION_DEPLOYER: rotationOptions.defaultDeployer,
      ...(rotationOptions.notify
        ? { ROTATION_NOTIFY_URL: rotationOptions.notify.url, ROTATION_NOTIFY_SECRET: rotationOptions.notify.secret }
        : {}),
    },
    async onboard(externalRef) {
      const handle = await startOnboarding(
        ctx.client,
        { externalRef, name: `Tenant ${externalRef}` },
        { taskQueue: ctx.taskQueue },
      );
      const result = await handle.result();
      return { subaccountId: result.subaccountId, keyId: result.keyId };
    },
    async token(externalRef, slot = 'default') {
      return (
        await revealKey(
          { pool: ctx.pool, vault },
          { externalRef, slot, operator: 'test', reason: 'test reads the token' },
        )
      ).token;
    },
    close: async () => {
      await gateway.close();
      if (platformWorker.getState() === 'RUNNING') platformWorker.shutdown();
      await platformRun;
      await connection.close();
      await ctx.close();
      await sim.close();
      await notify.close();
    },
  };
}

/** Calls the platform with a tenant key, as a consumer that still holds it would. */
export async function useKey(env: RotationEnv, token: string): Promise<number> {
  const response = await fetch(`${env.sim.apiBase}/projects`, { headers: { authorization: `Bearer ${token}` } });
  await response.body?.cancel();
  return response.status;
}

/** Keeps using a key every `everyMs` until stopped: a consumer that never switched. */
export function keepUsing(env: RotationEnv, token: string, everyMs = 200): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await useKey(env, token).catch(() => undefined);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function keysOf(env: RotationEnv, subaccountId: string) {
  return env.sim.state().apiKeys.filter((k) => k.subaccountId === subaccountId);
}

/** Waits until a rotation's query shows `stage`, and returns that status. */
export async function waitForStage(
  env: RotationEnv,
  workflowId: string,
  stage: RotationStage,
): Promise<RotationStatus> {
  const handle = env.client.workflow.getHandle(workflowId);
  return waitFor(async () => {
    const status = await handle.query(rotationStatusQuery);
    return status.stage === stage ? status : undefined;
  }, `${workflowId} to reach ${stage}`);
}
