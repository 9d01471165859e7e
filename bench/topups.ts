/**
 * topups — issue 17's benchmark, one run on one infrastructure:
 *
 *   seed tenants ─► floor: the same calls a top-up makes, from a plain loop (p50)
 *   ─► fundTenant one at a time (p50) ─► fundTenant with N in flight (throughput)
 *   ─► the bare three-local-activity workflow with N in flight (throughput)
 *   ─► one autoTopUpSweep over policy tenants, platform limit on (peak request rate vs the limit)
 *   ─► exactly-once check on the simulator's books
 */
import { performance } from 'node:perf_hooks';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { startTopUp } from '../src/client/money/start-top-up.js';
import { setFundingPolicy } from '../src/client/money/funding-policy.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { createLogger } from '../src/infra/log.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { buildSimulatorApp, DEFAULT_PLATFORM_KEY, type SimRuntime } from '../src/sim/index.js';
import { topUpPurpose } from '../src/domain/top-up-ids.js';
import { limitPlatform, seedActiveTenants, startPlatformWorker } from './lib/fleet.js';
import { runConcurrent, runSequential } from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';
import { startBenchWorker } from './lib/worker.js';
import { createBareActivities } from './onboarding/bare-activities.js';

export const topUpsBenchmark: Benchmark = {
  name: 'topups',
  description: 'fundTenant vs the floor and a bare three-activity workflow; the auto top-up sweep under the rate limit',
  options: [
    { flags: '--topups <n>', description: 'top-ups in the throughput run', defaultValue: 1000 },
    { flags: '--in-flight <n>', description: 'top-ups (and bare workflows) in flight at once', defaultValue: 500 },
    { flags: '--sweep-tenants <n>', description: 'policy tenants the sweep reads and tops up', defaultValue: 300 },
    { flags: '--latency-ms <n>', description: 'simulated latency added to every platform call', defaultValue: 25 },
    { flags: '--sequential <n>', description: 'timed runs one after another (p50/p99)', defaultValue: 30 },
    { flags: '--warmup <n>', description: 'untimed runs before each sequential series', defaultValue: 5 },
    {
      flags: '--rate-limit <n>',
      description: "the simulator's global limit, requests per second (also the sweep's budget)",
      defaultValue: 100,
    },
  ],
  run,
};

const AMOUNT = '1000';

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const count = options.topups!;
  const inFlight = options.inFlight!;
  const limit = options.rateLimit!;
  const seq = options.sequential!;
  const warmup = options.warmup!;
  const sweepTenants = options.sweepTenants!;
  const { app, runtime } = buildSimulatorApp({
    latencyMs: options.latencyMs ?? 25,
    seed: {
      parents: [
        {
          id: 'parent_bench',
          paidBalanceMicroUsd: '1000000000000000000',
          promoBalanceMicroUsd: '0',
          platformKeys: [DEFAULT_PLATFORM_KEY],
          personalTokens: [],
          activeKeyLimit: 10,
        },
      ],
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  infra.cleanup.defer('topups simulator', () => app.close());
  const simBase = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1`;
  const pool = createPool(await infra.freshDatabase('topups'), {
    applicationName: 'tenant-orchestrator-bench',
    max: 20,
  });
  infra.cleanup.defer('topups pool', () => pool.end());
  const platform = createPlatformClient({ baseUrl: simBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 10_000 });
  const activities = createActivities({
    pool,
    platform,
    vault: createVault(parseMasterKeys(generateMasterKey('bench'))),
    logger: createLogger({ level: 'warn' }),
  });

  const tenants = Array.from({ length: 200 }, (_, i) => `tu-bench-${String(i).padStart(4, '0')}`);
  const policyTenants = Array.from({ length: sweepTenants }, (_, i) => `tu-sweep-${String(i).padStart(4, '0')}`);
  log(`seeding ${tenants.length + policyTenants.length} active tenants`);
  await seedActiveTenants(activities, [...tenants, ...policyTenants]);

  const connection = await NativeConnection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('topups native connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });
  const taskQueue = `bench-topups-${process.pid}`;
  await startBenchWorker(
    {
      connection,
      namespace: infra.namespace,
      taskQueue,
      activities: { ...activities, ...createBareActivities() },
      tuning: { maxCachedWorkflows: 2000 },
    },
    infra.cleanup,
  );
  await startPlatformWorker(infra.cleanup, 'topups', {
    connection,
    namespace: infra.namespace,
    taskQueue,
    activities,
    requestsPerSecond: limit,
  });
  const tag = Date.now().toString(36);
  const tenantOf = (i: number) => tenants[i % tenants.length]!;

  log(`floor: ${seq} top-ups as a plain loop of the same calls`);
  const floor = await runSequential(seq, warmup, async (i) => {
    const input = {
      externalRef: tenantOf(i),
      idempotencyKey: `floor-${tag}-${i}`,
      amountMicroUsd: AMOUNT,
      requestedBy: 'bench',
      kind: 'top-up' as const,
    };
    const recorded = await activities.recordTopUp(input);
    if (recorded.state !== 'recorded') throw new Error(`floor top-up ${i}: ${recorded.state}`);
    const outcome = await activities.fundWallet({
      externalRef: input.externalRef,
      subaccountId: recorded.subaccountId,
      amountMicroUsd: AMOUNT,
      purpose: topUpPurpose(input.idempotencyKey),
    });
    if (outcome.state !== 'succeeded') throw new Error(`floor top-up ${i}: ${outcome.state}`);
  });
  const topUp = (prefix: string) => async (i: number) => {
    const handle = await startTopUp(
      client,
      {
        externalRef: tenantOf(i),
        idempotencyKey: `${prefix}-${tag}-${i}`,
        amountMicroUsd: AMOUNT,
        requestedBy: 'bench',
      },
      { taskQueue },
    );
    const result = await handle.result();
    if (result.state !== 'succeeded') throw new Error(`top-up ${i}: ${result.state}`);
  };
  log(`fundTenant: ${seq} one at a time`);
  const sequential = await runSequential(seq, warmup, topUp('seq'));
  log(`fundTenant: ${count} with ${inFlight} in flight`);
  const concurrent = await runConcurrent(count, inFlight, topUp('conc'));
  log(`bare three local activities: ${count} with ${inFlight} in flight`);
  const bare = await runConcurrent(count, inFlight, async (i) => {
    await client.workflow.execute('bareThreeLocalActivities', {
      taskQueue,
      workflowId: `bare-${tag}-${i}`,
      args: [{ waitMs: options.latencyMs ?? 25 }],
    });
  });

  log(`sweep over ${sweepTenants} policy tenants, platform limit ${limit}/s`);
  for (const ref of policyTenants)
    await setFundingPolicy(pool, ref, { below: '5000', to: '8000', maxPerDay: '100000', updatedBy: 'bench' });
  limitPlatform(runtime, limit);
  const sweepStarted = performance.now();
  const sweep = await client.workflow.execute('autoTopUpSweep', {
    taskQueue,
    workflowId: `sweep-${tag}`,
    args: [{ pageSize: 100 }],
  });
  await settled(pool);
  const sweepSeconds = (performance.now() - sweepStarted) / 1000;
  const traffic = runtime.traffic.snapshot();

  const violations = checkBooks(
    runtime,
    await pool
      .query<{ key: string }>(`SELECT idempotency_key AS key FROM transfer_intents WHERE state = 'succeeded'`)
      .then((r) => r.rows.map((x) => x.key)),
  );
  const autoDone = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM transfer_intents WHERE kind = 'auto' AND state = 'succeeded'`,
  );
  if (autoDone.rows[0]!.n !== sweepTenants)
    violations.push(`sweep: ${autoDone.rows[0]!.n} auto top-ups succeeded, expected ${sweepTenants}`);
  const ratio = concurrent.perSecond / Math.max(0.1, bare.perSecond);
  return {
    metrics: [
      { metric: 'floor p50 (plain loop, same calls)', value: Math.round(floor.p50), unit: 'ms' },
      {
        metric: 'fundTenant p50',
        value: Math.round(sequential.p50),
        unit: 'ms',
        target: {
          description: `<= 1.5 x floor (${Math.round(floor.p50 * 1.5)} ms)`,
          met: sequential.p50 <= floor.p50 * 1.5,
        },
      },
      { metric: `fundTenant throughput, ${inFlight} in flight`, value: concurrent.perSecond, unit: '/s' },
      { metric: `bare 3-local-activity workflow, ${inFlight} in flight`, value: bare.perSecond, unit: '/s' },
      { metric: 'fundTenant / bare throughput', value: Math.round(ratio * 100) / 100, unit: 'x' },
      {
        metric: `sweep of ${sweepTenants} tenants (reads + top-ups)`,
        value: Math.round(sweepSeconds * 10) / 10,
        unit: 's',
      },
      {
        metric: 'sweep peak platform request rate',
        value: traffic.peakRequestsPerSecond,
        unit: '/s',
        target: { description: `<= limit (${limit}/s)`, met: traffic.peakRequestsPerSecond <= limit },
      },
      {
        metric: 'sweep requests refused with 429',
        value: traffic.rateLimitedTotal,
        unit: '',
        target: { description: '= 0', met: traffic.rateLimitedTotal === 0 },
      },
    ],
    violations,
    details: { count, inFlight, limit, floor, sequential, concurrent, bare, sweep, sweepSeconds, traffic },
  };
}

async function settled(pool: Pool): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM transfer_intents WHERE state IN ('pending', 'unknown', 'needs_operator')`,
    );
    if (rows[0]!.n === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Each of our succeeded intents is on the simulator's books exactly once, and nothing else is. */
export function checkBooks(runtime: SimRuntime, ourKeys: string[]): string[] {
  const onBooks = runtime.state.transfers.map((t) => t.idempotencyKey);
  const counts = new Map<string, number>();
  for (const key of onBooks) counts.set(key, (counts.get(key) ?? 0) + 1);
  const violations = [...counts]
    .filter(([, n]) => n > 1)
    .map(([key, n]) => `transfer key ${key} on the books ${n} times`);
  const ours = new Set(ourKeys);
  violations.push(
    ...onBooks.filter((k) => !ours.has(k)).map((k) => `transfer ${k} on the books but not succeeded in our records`),
  );
  violations.push(...ourKeys.filter((k) => !counts.has(k)).map((k) => `succeeded intent ${k} not on the books`));
  return violations.slice(0, 50);
}
