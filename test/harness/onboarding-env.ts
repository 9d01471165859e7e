import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import {
  DEFAULT_PLATFORM_KEY,
  startSimulator,
  type RunningSimulator,
  type SimulatorOptions,
} from '../../src/sim/index.js';
import { inject } from 'vitest';
import {
  onboardingStatusQuery,
  type OnboardingStage,
  type OnboardingStatus,
} from '../../workflows/onboard-tenant-messages.js';
import { createTestContext, type TestContext, type TestWorker } from './context.js';
import { TEST_OUTBOUND_ALLOW_HOSTS, testOutbound } from './outbound.js';
import { startOperatorGateway } from './operator-gateway.js';

/**
 * A test file's world for orchestrator tests: its own database and task queue (TestContext), its own
 * platform simulator, a fresh master key, and a worker whose logs are captured for secret checks.
 */
export interface OrchestratorEnv extends TestContext {
  sim: RunningSimulator;
  secretsKeys: string;
  logs: string[];
  /** Environment for `tenantctl` child processes pointed at this world. */
  cliEnv: Record<string, string>;
  startOrchestratorWorker(): Promise<TestWorker>;
}

export async function createOrchestratorEnv(
  label: string,
  simOptions: SimulatorOptions = {},
  extraDeps: Partial<ActivityDeps> = {},
): Promise<OrchestratorEnv> {
  const ctx = await createTestContext(label);
  const sim = await startSimulator(simOptions);
  const secretsKeys = generateMasterKey(`t${randomBytes(3).toString('hex')}`);
  const logs: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    }),
  });
  const deps = {
    pool: ctx.pool,
    platform: createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 2_000 }),
    vault: createVault(parseMasterKeys(secretsKeys)),
    logger,
    outbound: testOutbound,
    ...extraDeps,
  };
  // tenantctl's operator commands reach the system through a gateway, as the harness operator; it reads
  // the platform (wallets, dry runs) with the parent key, as a production gateway does, and holds plans to
  // the worker's PLATFORM_TENANT_KEY_LIMIT and resumes to its RESUME_BALANCE_FLOOR_MICRO_USD, as one
  // configuration would.
  const gateway = await startOperatorGateway(
    { ...ctx, secretsKeys },
    {
      gateway: {
        preflightPlatform: deps.platform,
        tenantKeyLimit: extraDeps.platformTenantKeyLimit,
        resumeBalanceFloorMicroUsd: extraDeps.lifecycle?.resumeBalanceFloorMicroUsd,
      },
    },
  );
  return {
    ...ctx,
    sim,
    secretsKeys,
    logs,
    cliEnv: { ...orchestratorCliEnv(ctx, sim, secretsKeys), ...gateway.cliEnv },
    startOrchestratorWorker: () => ctx.startWorker(createActivities(deps)),
    close: async () => {
      await gateway.close();
      await ctx.close();
      await sim.close();
    },
  };
}

/** Environment for `tenantctl` child processes pointed at a test file's world. */
export function orchestratorCliEnv(
  ctx: Pick<TestContext, 'databaseUrl' | 'taskQueue'>,
  sim: RunningSimulator,
  secretsKeys: string,
): Record<string, string> {
  return {
    DATABASE_URL: ctx.databaseUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: ctx.taskQueue,
    PLATFORM_BASE_URL: sim.apiBase,
    PLATFORM_API_KEY: DEFAULT_PLATFORM_KEY,
    SECRETS_KEYS: secretsKeys,
    PAYLOAD_CODEC: 'off',
    OUTBOUND_ALLOW_HOSTS: TEST_OUTBOUND_ALLOW_HOSTS,
  };
}

/** Waits until an onboarding's query shows `stage`, and returns that status. */
export async function waitForOnboardingStage(
  env: Pick<TestContext, 'client'>,
  workflowId: string,
  stage: OnboardingStage,
  timeoutMs = 30_000,
): Promise<OnboardingStatus> {
  const handle = env.client.workflow.getHandle(workflowId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await handle.query(onboardingStatusQuery).catch(() => undefined);
    if (status?.stage === stage) return status;
    if (Date.now() > deadline) throw new Error(`${workflowId} never reached ${stage} (last: ${status?.stage})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Sets simulator faults for the test (see src/sim/CONTRACT-CHOICES.md for rule fields). */
export async function setFaults(sim: RunningSimulator, rules: Array<Record<string, unknown>>): Promise<void> {
  const response = await fetch(`${sim.url}/__sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rules }),
  });
  if (!response.ok) throw new Error(`setting faults failed: ${response.status} ${await response.text()}`);
}

export async function clearFaults(sim: RunningSimulator): Promise<void> {
  await fetch(`${sim.url}/__sim/faults`, { method: 'DELETE' });
}
