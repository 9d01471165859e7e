import type { NativeConnection } from '@temporalio/worker';
import type { Activities } from '../../activities/index.js';
import type { Cleanup } from '../../src/infra/cleanup.js';
import { createPlatformActivityWorker } from '../../src/main/wiring/platform-worker.js';
import { buildSimulatorApp, DEFAULT_PLATFORM_KEY, type SimRuntime } from '../../src/sim/index.js';
import { RateLimiter, TrafficMeter } from '../../src/sim/traffic.js';
import type { BenchInfra } from './infra.js';
import { runConcurrent } from './stats.js';
import { startBenchWorker } from './worker.js';

/**
 * What the fleet benchmarks (rotation, drift) share: an in-process simulator whose rate limit and
 * traffic meter switch on after seeding, seeded active tenants, and the rate-limited platform worker.
 */
export async function startFleetSimulator(
  cleanup: Cleanup,
  label: string,
  latencyMs: number,
): Promise<{ runtime: SimRuntime; simBase: string }> {
  const { app, runtime } = buildSimulatorApp({
    latencyMs,
    seed: {
      parents: [
        {
          id: 'parent_bench',
          paidBalanceMicroUsd: '0',
          promoBalanceMicroUsd: '0',
          platformKeys: [DEFAULT_PLATFORM_KEY],
          personalTokens: [],
          activeKeyLimit: 10,
        },
      ],
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  cleanup.defer(`${label} simulator`, () => app.close());
  return { runtime, simBase: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1` };
}

/** Onboards each ref the way the workflow would (sub-account, first key, active), 32 at a time. */
export async function seedActiveTenants(
  activities: Pick<Activities, 'ensureSubaccount' | 'issueTenantKey' | 'markTenantActive'>,
  refs: string[],
): Promise<void> {
  await runConcurrent(refs.length, 32, async (i) => {
    const externalRef = refs[i]!;
    const { subaccountId } = await activities.ensureSubaccount({ externalRef, name: `Bench ${i}` });
    await activities.issueTenantKey({ externalRef, subaccountId, slot: 'default', generation: 1 });
    await activities.markTenantActive({ externalRef });
  });
}

export async function startPlatformWorker(
  cleanup: Cleanup,
  label: string,
  input: {
    connection: NativeConnection;
    namespace: string;
    taskQueue: string;
    activities: object;
    requestsPerSecond: number;
  },
): Promise<void> {
  const worker = await createPlatformActivityWorker(input);
  const running = worker.run();
  cleanup.defer(`${label} platform worker`, async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
  });
}

/** From here the platform enforces the limit and every request is counted. */
export function limitPlatform(runtime: SimRuntime, requestsPerSecond: number): void {
  runtime.rateLimiter = new RateLimiter(requestsPerSecond);
  runtime.traffic = new TrafficMeter();
}

/** The fleet workflow's worker and the rate-limited platform worker on the same task queue. */
export async function startFleetWorkers(
  infra: BenchInfra,
  label: string,
  input: {
    connection: NativeConnection;
    taskQueue: string;
    activities: object;
    limit: number;
    maxCachedWorkflows: number;
  },
): Promise<void> {
  const { connection, taskQueue, activities } = input;
  await startBenchWorker(
    {
      connection,
      namespace: infra.namespace,
      taskQueue,
      activities,
      tuning: { maxCachedWorkflows: input.maxCachedWorkflows },
    },
    infra.cleanup,
  );
  await startPlatformWorker(infra.cleanup, label, {
    connection,
    namespace: infra.namespace,
    taskQueue,
    activities,
    requestsPerSecond: input.limit,
  });
}
