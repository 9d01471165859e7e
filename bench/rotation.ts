/**
 * rotation — issue 5's benchmark: a fleet rotation of N tenants against a simulator that enforces a
 * global rate limit, reporting total time, the peak request rate against the limit (target: never
 * above it, no 429) and platform calls per rotation.
 *
 *   seed N active tenants (activities called directly, no limit) ─► switch the limit on, reset the
 *   traffic meter ─► rotateFleet (notify deployer, quiet period 0) ─► read the meter ─► check keys
 *
 * The simulator runs in this process (not a child like onboarding's) because its rate limiter and
 * traffic meter must be switched on and reset between seeding and the measured fleet run.
 */
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { createPool } from '../src/db/pool.js';
import { createLogger } from '../src/infra/log.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY } from '../src/sim/index.js';
import type { rotateFleet } from '../workflows/keys/rotate-fleet.js';
import { limitPlatform, seedActiveTenants, startFleetSimulator, startFleetWorkers } from './lib/fleet.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';
import { createOutboundFetch } from '../src/infra/outbound/fetch.js';

export const rotationBenchmark: Benchmark = {
  name: 'rotation',
  description: 'fleet key rotation under a platform rate limit',
  options: [
    { flags: '--tenants <n>', description: 'tenants rotated by the fleet run', defaultValue: 1000 },
    {
      flags: '--rate-limit <n>',
      description: "the simulator's global limit, requests per second (also the rotation budget)",
      defaultValue: 100,
    },
    { flags: '--fleet-concurrency <n>', description: 'rotations in flight at once', defaultValue: 200 },
  ],
  run,
};

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const tenants = options.tenants!;
  const limit = options.rateLimit!;
  const { runtime, simBase } = await startFleetSimulator(infra.cleanup, 'rotation', options.latencyMs ?? 0);
  const notifyUrl = await startNotifySink(infra.cleanup);

  const pool = createPool(await infra.freshDatabase('rotation'), {
    applicationName: 'tenant-orchestrator-bench',
    max: 20,
  });
  infra.cleanup.defer('rotation pool', () => pool.end());
  const activities = createActivities({
    pool,
    platform: createPlatformClient({ baseUrl: simBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 10_000 }),
    vault: createVault(parseMasterKeys(generateMasterKey('bench'))),
    logger: createLogger({ level: 'warn' }),
    rotation: {
      defaultDeployer: 'notify',
      envVariable: 'TENANT_API_KEY',
      notify: { url: notifyUrl, secret: 'bench-notify-secret-0123456789', timeoutMs: 5_000 },
    },
    // The notice sink is on loopback: the outbound guard lets it through.
    outbound: createOutboundFetch({ allowHosts: [{ host: '127.0.0.1' }] }),
  });

  log(`seeding ${tenants} active tenants (no rate limit yet)`);
  const refs = Array.from({ length: tenants }, (_, i) => `rot-bench-${String(i).padStart(5, '0')}`);
  await seedActiveTenants(activities, refs);

  const connection = await NativeConnection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('rotation native connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });
  const taskQueue = `bench-rotation-${process.pid}`;
  await startFleetWorkers(infra, 'rotation', { connection, taskQueue, activities, limit, maxCachedWorkflows: 2000 });

  limitPlatform(runtime, limit);
  log(`fleet rotation of ${tenants} tenants, ${options.fleetConcurrency} at once, platform limit ${limit}/s`);
  const started = performance.now();
  const totals = await client.workflow.execute<typeof rotateFleet>('rotateFleet', {
    taskQueue,
    workflowId: `rotate-fleet:bench-${process.pid}`,
    args: [
      {
        concurrency: options.fleetConcurrency!,
        pageSize: 500,
        options: { quietPeriod: '0s', propagationAllowance: '0s', pollInterval: '1s' },
      },
    ],
  });
  const seconds = (performance.now() - started) / 1000;
  const stats = runtime.traffic.snapshot();

  const violations = await checkKeys(pool, refs);
  if (totals.completed !== tenants)
    violations.push(`fleet totals: ${JSON.stringify(totals)} (expected ${tenants} completed)`);
  const callsPerRotation = stats.requestsTotal / Math.max(1, totals.completed);
  return {
    metrics: [
      { metric: `fleet rotation of ${tenants} tenants`, value: Math.round(seconds * 10) / 10, unit: 's' },
      { metric: 'rotations per second', value: Math.round((totals.completed / seconds) * 10) / 10, unit: '/s' },
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
      { metric: 'platform calls per rotation', value: Math.round(callsPerRotation * 100) / 100, unit: '' },
    ],
    violations,
    details: {
      tenants,
      limit,
      fleetConcurrency: options.fleetConcurrency,
      totals,
      seconds,
      traffic: stats,
      byRoutePerRotation: Object.fromEntries(
        Object.entries(stats.byRoute).map(([r, n]) => [r, n / Math.max(1, totals.completed)]),
      ),
    },
  };
}

/** Every tenant: generation 2 active, generation 1 revoked, rotation completed. */
export async function checkKeys(pool: ReturnType<typeof createPool>, refs: string[]): Promise<string[]> {
  const { rows } = await pool.query<{ externalRef: string; keys: string; rotation: string | null }>(
    `SELECT t.external_ref AS "externalRef",
            (SELECT string_agg(k.generation || ':' || k.status, ',' ORDER BY k.generation) FROM tenant_keys k WHERE
              k.external_ref = t.external_ref) AS keys,
            (SELECT r.state FROM key_rotations r WHERE r.external_ref = t.external_ref ORDER BY r.id DESC LIMIT 1) AS
              rotation
       FROM tenants t WHERE t.external_ref = ANY($1::text[])`,
    [refs],
  );
  return rows
    .filter((r) => r.keys !== '1:revoked,2:active' || r.rotation !== 'completed')
    .map((r) => `${r.externalRef}: keys ${r.keys}, rotation ${r.rotation}`);
}

/** The parent's keyRotated endpoint: answers 204 to everything (signatures are checked in the tests). */
export async function startNotifySink(cleanup: BenchContext['infra']['cleanup']): Promise<string> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.defer('notify sink', () => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/key-rotated`;
}
