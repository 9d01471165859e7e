/**
 * drift — issue 10's benchmark: a fleet drift check of N tenants with nothing out of band, against a
 * simulator that enforces a global rate limit. Reports the time, the peak request rate against the
 * limit (target: never above it, no 429) and platform calls per tenant; any finding is a violation.
 *
 *   seed N active tenants (activities called directly, no limit) ─► switch the limit on, reset the
 *   traffic meter ─► reconcileFleet (platform queue at the limit, paced sub-account listing)
 *   ─► read the meter ─► check zero findings
 */
import { performance } from 'node:perf_hooks';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { countOpenFindingsByKind } from '../src/db/drift-findings-store.js';
import { createPool } from '../src/db/pool.js';
import { createDriftListClient } from '../activities/drift/paced-fetch.js';
import { createLogger } from '../src/infra/log.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY } from '../src/sim/index.js';
import type { reconcileFleet } from '../workflows/reconcile-fleet.js';
import { limitPlatform, seedActiveTenants, startFleetSimulator, startFleetWorkers } from './lib/fleet.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';

export const driftBenchmark: Benchmark = {
  name: 'drift',
  description: 'fleet drift check under a platform rate limit, nothing out of band',
  options: [
    { flags: '--tenants <n>', description: 'tenants in the fleet', defaultValue: 1000 },
    {
      flags: '--rate-limit <n>',
      description: "the simulator's global limit, requests per second (also the platform budget)",
      defaultValue: 100,
    },
  ],
  run,
};

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const tenants = options.tenants!;
  const limit = options.rateLimit!;
  const { runtime, simBase } = await startFleetSimulator(infra.cleanup, 'drift', options.latencyMs ?? 0);

  const pool = createPool(await infra.freshDatabase('drift'), {
    applicationName: 'tenant-orchestrator-bench',
    max: 20,
  });
  infra.cleanup.defer('drift pool', () => pool.end());
  const connection = await NativeConnection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('drift native connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });
  const activities = createActivities({
    pool,
    platform: createPlatformClient({ baseUrl: simBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 10_000 }),
    vault: createVault(parseMasterKeys(generateMasterKey('bench'))),
    logger: createLogger({ level: 'warn' }),
    drift: {
      policies: {},
      quietPeriodMs: 3_600_000,
      rotationMaxAgeMs: 90 * 86_400_000,
      temporal: client,
      listPlatform: createDriftListClient({
        baseUrl: simBase,
        platformKey: DEFAULT_PLATFORM_KEY,
        timeoutMs: 10_000,
        requestsPerSecond: limit,
      }),
    },
  });

  log(`seeding ${tenants} active tenants (no rate limit yet)`);
  const refs = Array.from({ length: tenants }, (_, i) => `drift-bench-${process.pid}-${String(i).padStart(5, '0')}`);
  await seedActiveTenants(activities, refs);

  const taskQueue = `bench-drift-${process.pid}`;
  await startFleetWorkers(infra, 'drift', { connection, taskQueue, activities, limit, maxCachedWorkflows: 100 });

  limitPlatform(runtime, limit);
  log(`fleet drift check of ${tenants} tenants, platform limit ${limit}/s`);
  const started = performance.now();
  const result = await client.workflow.execute<typeof reconcileFleet>('reconcileFleet', {
    taskQueue,
    workflowId: `drift:bench-${process.pid}`,
    args: [{ pageSize: 250, concurrency: 50 }],
  });
  const seconds = (performance.now() - started) / 1000;
  const stats = runtime.traffic.snapshot();

  const open = await countOpenFindingsByKind(pool);
  const violations: string[] = [];
  if (result.openTotal !== 0 || Object.keys(open).length)
    violations.push(`findings with nothing out of band: ${JSON.stringify(open)}`);
  if (result.totals.tenantsChecked !== tenants)
    violations.push(`checked ${result.totals.tenantsChecked} of ${tenants} (${JSON.stringify(result.totals)})`);
  return {
    metrics: [
      { metric: `drift check of ${tenants} tenants`, value: Math.round(seconds * 10) / 10, unit: 's' },
      { metric: 'tenants checked per second', value: Math.round((tenants / seconds) * 10) / 10, unit: '/s' },
      {
        metric: 'peak platform request rate',
        value: stats.peakRequestsPerSecond,
        unit: '/s',
        target: { description: `<= limit (${limit}/s)`, met: stats.peakRequestsPerSecond <= limit },
      },
      {
        metric: 'requests refused with 429',
        value: stats.rateLimitedTotal,
        unit: '',
        target: { description: '= 0', met: stats.rateLimitedTotal === 0 },
      },
      {
        metric: 'findings (nothing out of band)',
        value: result.openTotal,
        unit: '',
        target: { description: '= 0', met: result.openTotal === 0 },
      },
      { metric: 'platform calls per tenant', value: Math.round((stats.requestsTotal / tenants) * 100) / 100, unit: '' },
    ],
    violations,
    details: { tenants, limit, seconds, totals: result.totals, traffic: stats },
  };
}
