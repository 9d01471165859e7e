/**
 * fleet — issue 34's benchmark: a fleet of N tenants on the production worker (`tenantctl worker`
 * processes: main queue plus the rate-limited platform queue, payload codec on), each fleet phase
 * timed against its floor (the platform calls it needs ÷ the rate limit):
 *
 *   SEED the fleet (activities called directly, no limit: sub-account, first key, active; funding
 *   policies on part of it, half below their floor) ─► switch the platform's limit on
 *   ─► rotateFleet (every tenant, quiet period 0) ─► reconcileFleet (every tenant, nothing out of band)
 *   ─► autoTopUpSweep (policy tenants; those below their floor get one top-up each)
 *   ─► plan rollout (the fleet put on plan v1 in our records, v2 adds a `ci` slot: one key each)
 *
 * Per phase: duration ÷ floor, mean and peak request rate ÷ limit, 429s, worker RSS and CPU,
 * Temporal server and Postgres CPU (when the bench runs them), the longest fleet workflow run's
 * history, a TenantStatus visibility query's time, and exactly-once checks. `--cluster` runs it
 * on a Temporal cluster on Postgres (npm run cluster's launcher) instead of the dev server.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { createActivities } from '../activities/index.js';
import { builtAtMs, distState } from '../bin/dist-fresh.js';
import { DEFAULTS } from '../src/config/defaults.js';
import { setFundingPolicy } from '../src/client/money/funding-policy.js';
import { setupNamespace } from '../src/client/namespace-setup.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { countOpenFindingsByKind } from '../src/db/drift-findings-store.js';
import { planRolloutWorkflowId } from '../src/domain/ids.js';
import { ROLLOUT_CONCURRENCY_MAX } from '../src/domain/plan-rollout.js';
import { tenantStatusKey } from '../src/domain/search-attributes.js';
import { startTemporalCluster } from '../src/infra/temporal-cluster.js';
import { createLogger } from '../src/infra/log.js';
import { statementStats, type StatementStats } from './lib/statement-stats.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY, type SimRuntime } from '../src/sim/index.js';
import { TrafficMeter, type TrafficStats } from '../src/sim/traffic.js';
import { limitPlatform, seedActiveTenants, startFleetSimulator } from './lib/fleet.js';
import { descendantsCpuMs } from './lib/process-cpu.js';
import { runConcurrent } from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult, Metric } from './lib/types.js';
import {
  addCiSlot,
  checkExactlyOnce,
  checkSchedules,
  createPlanV1,
  dryRunCalls,
  putOnPlanV1,
  rollOut,
} from './plans.js';
import { checkKeys, startNotifySink } from './rotation.js';
import { checkBooks } from './topups.js';
import type { autoTopUpSweep } from '../workflows/auto-top-up-sweep.js';
import type { reconcileFleet } from '../workflows/reconcile-fleet.js';
import type { rotateFleet } from '../workflows/keys/rotate-fleet.js';
import {
  coresUsed,
  neededCalls,
  phaseFigures,
  rssGrowthPercent,
  type FleetPhase,
  type PhaseCounts,
  type PhaseFigures,
} from './fleet/floor.js';
import { benchClient, sampleWorkersRss, startFleetWorkers, type FleetWorkers } from './fleet/workers.js';

// Issue 34's targets (a benchmark, not a timed test: a missed one is a measurement).
const FLOOR_FACTOR = 1.2;
const RSS_TARGET_MB = 400;
const RSS_GROWTH_TARGET_PERCENT = 10;
const POLICY = { below: '5000', to: '8000', maxPerDay: '100000' };
const ABOVE_FLOOR_BALANCE = 6000n;
/** The plan rollout's page, as the plans bench's default. */
const ROLLOUT_PAGE_SIZE = 500;

export const fleetBenchmark: Benchmark = {
  name: 'fleet',
  description:
    'a SEEDED fleet on production worker processes: rotation, drift check, auto top-up sweep and plan rollout ' +
    'against their floors',
  options: [
    { flags: '--tenants <n>', description: 'tenants in the fleet', defaultValue: 1000 },
    {
      flags: '--rate-limit <n>',
      description:
        "the simulator's global limit, requests per second (also the workers' PLATFORM_RATE_LIMIT_PER_SECOND)",
      defaultValue: DEFAULTS.PLATFORM_RATE_LIMIT_PER_SECOND,
    },
    {
      flags: '--fleet-concurrency <n>',
      description:
        "rotations in flight at once (rotateFleet concurrency); also the plan rollout's " +
        `(at most ${ROLLOUT_CONCURRENCY_MAX})`,
      defaultValue: 50,
    },
    {
      flags: '--propagation-allowance <seconds>',
      description:
        "fleet: each rotation's propagation allowance (production: 15m): the old key is revoked no sooner " +
        'after the new one is deployed, so a rotation waits at least this long; the gate looks again when it ends',
      defaultValue: 0,
    },
    {
      flags: '--gate-poll-interval <seconds>',
      description:
        "fleet: the quiet gate's poll interval; 0: the allowance, at least 1 s (one look as the gate opens, the " +
        'next as the allowance ends); shorter, the gate looks that often while it waits, as a production rotation does',
      defaultValue: 0,
    },
    {
      flags: '--policy-percent <n>',
      description: 'fleet: percent of the fleet with an auto top-up policy (half of them below their floor)',
      defaultValue: 20,
    },
    {
      flags: '--fleet-phases <n>',
      description: 'fleet: which phases, a sum of 1 rotation, 2 drift check, 4 auto top-up sweep, 8 plan rollout',
      defaultValue: 15,
    },
    {
      flags: '--worker-budget-percent <n>',
      description:
        "fleet: the workers' PLATFORM_RATE_LIMIT_PER_SECOND as a percent of the simulator's limit (100: the same; " +
        'more measures what the limiter shape leaves unused, at the risk of 429s)',
      defaultValue: 100,
    },
    {
      flags: '--fleet-workers <n>',
      description: 'fleet: `tenantctl worker` processes on the task queue',
      defaultValue: 1,
    },
  ],
  run,
};

interface PhaseResult {
  phase: FleetPhase;
  label: string;
  seconds: number;
  needed: number;
  /** The least wait one unit makes whatever the rate, counted once in the floor. */
  waitSeconds: number;
  figures: PhaseFigures;
  traffic: TrafficStats;
  rss: { peakMb: number[]; lastMb: number[] };
  cpuMs: Record<string, number>;
  history: { runs: number; longestRunEvents: number };
  visibility: VisibilityTiming | null;
  violations: string[];
  extra: Record<string, unknown>;
}

interface VisibilityTiming {
  query: string;
  matched: number;
  countMs: number;
  listMs: number;
}

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const tenants = options.tenants!;
  const limit = options.rateLimit!;
  const phases = options.fleetPhases!;
  const allowanceSeconds = Number(options.propagationAllowance ?? 0);
  const gatePollSeconds = Number(options.gatePollInterval ?? 0) || Math.max(1, allowanceSeconds);
  const tag = Date.now().toString(36);

  const temporal = options.cluster
    ? await startCluster(context)
    : { address: infra.temporalAddress, label: 'dev server' };
  const { runtime, simBase } = await startFleetSimulator(infra.cleanup, 'fleet', options.latencyMs ?? 0);
  runtime.state.parents.get('parent_bench')!.paidBalance = 10n ** 18n;
  const notifyUrl = await startNotifySink(infra.cleanup);
  const databaseUrl = await infra.freshDatabase('fleet');
  const pool = createPool(databaseUrl, { applicationName: 'tenant-orchestrator-bench', max: 20 });
  infra.cleanup.defer('fleet pool', () => pool.end());
  const secretsKeys = generateMasterKey('benchfleet');
  const activities = createActivities({
    pool,
    platform: createPlatformClient({ baseUrl: simBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 10_000 }),
    vault: createVault(parseMasterKeys(secretsKeys)),
    logger: createLogger({ level: 'warn' }),
  });

  const refs = Array.from({ length: tenants }, (_, i) => `fleet-${tag}-${String(i).padStart(5, '0')}`);
  const policyEvery = Math.max(1, Math.round(100 / Math.max(1, options.policyPercent!)));
  const policyRefs = options.policyPercent ? refs.filter((_, i) => i % policyEvery === 0) : [];
  const belowRefs = policyRefs.filter((_, i) => i % 2 === 0);
  const aboveRefs = policyRefs.filter((_, i) => i % 2 === 1);
  log(`SEEDING ${tenants} active tenants directly (activities called, no workflows, no rate limit)`);
  const seedStarted = performance.now();
  await seedActiveTenants(activities, refs);
  await runConcurrent(policyRefs.length, 16, async (i) => {
    await setFundingPolicy(pool, policyRefs[i]!, { ...POLICY, updatedBy: 'bench' });
  });
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  log(
    `seeded in ${seedSeconds.toFixed(1)} s: ${tenants} tenants, ${policyRefs.length} with a policy ` +
      `(${belowRefs.length} below their floor)`,
  );

  const taskQueue = `bench-fleet-${process.pid}`;
  const workerCode = workerCodeOf();
  const workerEnv = {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: infra.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PLATFORM_BASE_URL: simBase,
    PLATFORM_API_KEY: DEFAULT_PLATFORM_KEY,
    PLATFORM_RATE_LIMIT_PER_SECOND: String((limit * options.workerBudgetPercent!) / 100),
    SECRETS_KEYS: secretsKeys,
    PAYLOAD_CODEC: 'on',
    ROTATION_DEPLOYER: 'notify',
    ROTATION_NOTIFY_URL: notifyUrl,
    ROTATION_NOTIFY_SECRET: 'bench-notify-secret-0123456789',
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    DATA_DIR: '/nonexistent-bench-stack-dir',
    ...(process.env.BENCH_WORKER_NODE_FLAGS ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_FLAGS } : {}),
    ...(workerCode.fromDist ? { TENANTCTL_FROM_DIST: '1' } : {}),
  };
  log(`starting ${options.fleetWorkers} tenantctl worker process(es) on ${temporal.label}`);
  const workers = await startFleetWorkers(infra.cleanup, options.fleetWorkers!, workerEnv, log);
  const client = await benchClient(infra.cleanup, 'fleet', {
    address: temporal.address,
    namespace: infra.namespace,
    secretsKeys,
  });

  const idleRssMb = Math.max(...workers.rssMb());
  limitPlatform(runtime, limit);
  // BENCH_PG_STAT_STATEMENTS=1: what Postgres spent on each statement of a phase, per tenant (printed).
  const pgStats = infra.statementStats ? await statementStats(databaseUrl) : undefined;
  if (pgStats) infra.cleanup.defer('statement stats', () => pgStats.close());
  const measure = phaseMeasurer({ runtime, workers, client, limit, log, pgStats });
  const results: PhaseResult[] = [];

  if (phases & 1) {
    const workflowId = `fleet-bench-rotate-${tag}`;
    results.push(
      await measure(
        'rotation',
        `fleet rotation of ${tenants}`,
        { tenants, waitSeconds: allowanceSeconds },
        workflowId,
        async () => {
          const totals = await client.workflow.execute<typeof rotateFleet>('rotateFleet', {
            taskQueue,
            workflowId,
            args: [
              {
                concurrency: options.fleetConcurrency!,
                options: {
                  quietPeriod: '0s',
                  propagationAllowance: `${allowanceSeconds}s`,
                  // By default one look as the gate opens, the next as the allowance ends (as a fleet is best configured).
                  pollInterval: `${gatePollSeconds}s`,
                },
              },
            ],
          });
          return { totals };
        },
        async ({ totals }) => {
          const violations = [
            ...(await checkKeys(pool, refs)),
            ...activeKeysOnPlatform(runtime, refs),
            ...(await quietGateBeforeRevoke(pool)),
          ];
          const timeline = await rotationTimeline(pool);
          log(`rotation timeline (p50/p90 s): ${JSON.stringify(timeline)}`);
          if (totals.completed !== tenants)
            violations.push(`rotation totals ${JSON.stringify(totals)} (expected ${tenants} completed)`);
          return { violations, visibilityType: 'rotateTenantKey', extra: { timeline } };
        },
      ),
    );
  }
  if (phases & 2) {
    const workflowId = `fleet-bench-drift-${tag}`;
    results.push(
      await measure(
        'drift',
        `drift check of ${tenants}`,
        { tenants, subaccounts: runtime.state.subaccounts.size },
        workflowId,
        async () => ({
          result: await client.workflow.execute<typeof reconcileFleet>('reconcileFleet', {
            taskQueue,
            workflowId,
            args: [{}],
          }),
        }),
        async ({ result }) => {
          const open = await countOpenFindingsByKind(pool);
          const violations: string[] = [];
          if (result.openTotal !== 0 || Object.keys(open).length)
            violations.push(`drift findings with nothing out of band: ${JSON.stringify(open)}`);
          if (result.totals.tenantsChecked !== tenants)
            violations.push(`drift checked ${result.totals.tenantsChecked} of ${tenants}`);
          return { violations, visibilityType: null };
        },
      ),
    );
  }
  if (phases & 4) {
    // Set here, not at seeding: money with no transfer behind it is what a drift check reports.
    const above = new Set(aboveRefs);
    for (const sub of runtime.state.subaccounts.values())
      if (sub.externalRef && above.has(sub.externalRef)) sub.balance = ABOVE_FLOOR_BALANCE;
    const workflowId = `fleet-bench-sweep-${tag}`;
    results.push(
      await measure(
        'sweep',
        `auto top-up sweep of ${policyRefs.length} (${belowRefs.length} below)`,
        { tenants: policyRefs.length, below: belowRefs.length },
        workflowId,
        async () => {
          const sweep = await client.workflow.execute<typeof autoTopUpSweep>('autoTopUpSweep', {
            taskQueue,
            workflowId,
            args: [{}],
          });
          // The top-ups are abandoned children: the phase ends when they have all settled.
          const settled = await topUpsSettled(pool, sweep.started, 600_000);
          return { sweep, settled };
        },
        async ({ sweep, settled }) => {
          const succeeded = await pool
            .query<{ key: string }>(`SELECT idempotency_key AS key FROM transfer_intents WHERE state = 'succeeded'`)
            .then((r) => r.rows.map((x) => x.key));
          const violations = [...checkBooks(runtime, succeeded), ...topUpTargets(runtime, belowRefs, aboveRefs)];
          if (!settled) violations.push('auto top-ups had not settled within 10 minutes of the sweep');
          if (sweep.started !== belowRefs.length)
            violations.push(`sweep started ${sweep.started} top-ups, expected ${belowRefs.length}`);
          return { violations, visibilityType: 'fundTenant' };
        },
      ),
    );
  }
  if (phases & 8) {
    // Here, not at seeding: a drift check reports a tenant on a plan whose schedules it lacks.
    const plan = `fleet-${tag}`;
    const seedStarted = performance.now();
    await createPlanV1(pool, plan);
    await putOnPlanV1(pool, refs, plan);
    await addCiSlot(pool, plan);
    const dryRun = await dryRunCalls(pool, tenants, plan);
    log(
      `plan ${plan}@1 (default) put on ${tenants} tenants in our records and @2 (adds ci) made in ` +
        `${((performance.now() - seedStarted) / 1000).toFixed(1)} s; dry run: ${dryRun.tenants} tenants, ` +
        `${dryRun.calls} platform calls`,
    );
    const concurrency = Math.min(options.fleetConcurrency!, ROLLOUT_CONCURRENCY_MAX);
    results.push(
      await measure(
        'rollout',
        `plan rollout of ${tenants}`,
        { tenants, platformCalls: dryRun.calls },
        planRolloutWorkflowId({ name: plan, version: 2 }),
        () => rollOut(client, pool, { plan, concurrency, pageSize: ROLLOUT_PAGE_SIZE, taskQueue }),
        async ({ result }) => {
          const violations = [
            // A rotated fleet's tenants each had their generation 1 key revoked before the rollout.
            ...(await checkExactlyOnce(pool, runtime, refs, { plan, revokedBefore: phases & 1 ? 1 : 0 })),
            ...(await checkSchedules(client, refs)),
          ];
          if (result.totals.converged !== tenants)
            violations.push(`rollout totals ${JSON.stringify(result.totals)} (expected ${tenants} converged)`);
          // convergeTenantPlan sets no TenantStatus: nothing to time.
          return { violations, visibilityType: null, extra: { concurrency, pageSize: ROLLOUT_PAGE_SIZE } };
        },
      ),
    );
  }
  return report({
    results,
    tenants,
    limit,
    options,
    seedSeconds,
    idleRssMb,
    workerCode: workerCode.label,
    temporalLabel: temporal.label,
    infra,
  });
}

/** A phase: traffic meter reset, RSS sampled, CPU read before and after, then checks and history. */
function phaseMeasurer(deps: {
  runtime: SimRuntime;
  workers: FleetWorkers;
  client: Client;
  limit: number;
  log: (line: string) => void;
  pgStats?: StatementStats | undefined;
}) {
  return async <T>(
    phase: FleetPhase,
    label: string,
    counts: PhaseCounts,
    workflowId: string,
    body: () => Promise<T>,
    check: (
      value: T,
    ) => Promise<{ violations: string[]; visibilityType: string | null; extra?: Record<string, unknown> }>,
  ): Promise<PhaseResult> => {
    const { runtime, workers, client, limit, log } = deps;
    const needed = neededCalls(phase, counts);
    log(
      `${label}: needs ${needed} platform calls, floor ${(needed / limit + (counts.waitSeconds ?? 0)).toFixed(1)} s ` +
        `at ${limit}/s${counts.waitSeconds ? ` (${counts.waitSeconds} s of it the wait one rotation makes)` : ''}`,
    );
    runtime.traffic = new TrafficMeter();
    await deps.pgStats?.reset();
    const rss = sampleWorkersRss(workers);
    const cpuBefore = descendantsCpuMs();
    const ownBefore = process.cpuUsage();
    const started = performance.now();
    const value = await body();
    const seconds = (performance.now() - started) / 1000;
    const own = process.cpuUsage(ownBefore);
    const cpuAfter = descendantsCpuMs();
    const statements = await deps.pgStats?.read(counts.tenants);
    for (const st of statements ?? [])
      log(
        `${label}: per tenant ${st.callsPerRun} x ${st.execMsPerRun} ms exec + ${st.planMsPerRun} ms plan: ` +
          st.statement,
      );
    const traffic = runtime.traffic.snapshot();
    const rssSeen = rss.stop();
    const cpuMs: Record<string, number> = {
      'bench process (client, simulator)': Math.round((own.user + own.system) / 1000),
    };
    for (const [name, ms] of Object.entries(cpuAfter)) {
      const used = Math.round(ms - (cpuBefore[name] ?? 0));
      if (used > 0) cpuMs[name] = used;
    }
    const figures = phaseFigures({
      seconds,
      requests: traffic.requestsTotal,
      peakPerSecond: traffic.peakRequestsPerSecond,
      limit,
      neededCalls: needed,
      waitSeconds: counts.waitSeconds ?? 0,
    });
    log(
      `${label}: ${seconds.toFixed(1)} s = ${figures.ratioToFloor} x floor; mean ${figures.meanPerSecond}/s, ` +
        `peak ${traffic.peakRequestsPerSecond}/s, ${traffic.rateLimitedTotal} x 429, requests ${traffic.requestsTotal}`,
    );
    const checked = await check(value);
    const history = await longestRun(client, workflowId);
    const visibility = checked.visibilityType ? await timeVisibility(client, checked.visibilityType) : null;
    if (checked.violations.length) log(`${label}: ${checked.violations.length} violations`);
    return {
      phase,
      label,
      seconds,
      needed,
      waitSeconds: counts.waitSeconds ?? 0,
      figures,
      traffic,
      rss: rssSeen,
      cpuMs,
      history,
      visibility,
      violations: checked.violations,
      extra: { value, ...checked.extra },
    };
  };
}

/** Every run of a (continued-as-new) fleet workflow: how many, and the most events in one. */
async function longestRun(client: Client, workflowId: string): Promise<{ runs: number; longestRunEvents: number }> {
  let runs = 0;
  let longest = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    runs += 1;
    const events =
      execution.historyLength ||
      (await client.workflow.getHandle(workflowId, execution.runId).describe()).historyLength;
    longest = Math.max(longest, events);
  }
  return { runs, longestRunEvents: longest };
}

/**
 * "Tenants in state X" through the TenantStatus search attribute: X is the state the phase's
 * per-tenant workflows were left in (read from one of them); timed as a count and as a full listing.
 */
async function timeVisibility(client: Client, workflowType: string): Promise<VisibilityTiming | null> {
  let state: string | undefined;
  for await (const execution of client.workflow.list({ query: `WorkflowType = '${workflowType}'`, pageSize: 1 })) {
    state = execution.typedSearchAttributes.get(tenantStatusKey);
    break;
  }
  if (!state) return null;
  const query = `TenantStatus = '${state}'`;
  const countStarted = performance.now();
  const { count } = await client.workflow.count(query);
  const countMs = performance.now() - countStarted;
  const listStarted = performance.now();
  let listed = 0;
  for await (const _ of client.workflow.list({ query, pageSize: 1000 })) listed += 1;
  const listMs = performance.now() - listStarted;
  return { query, matched: Math.max(count, listed), countMs: Math.round(countMs), listMs: Math.round(listMs) };
}

/** On the platform: each fleet tenant's sub-account has exactly one active tenant key. */
function activeKeysOnPlatform(runtime: SimRuntime, refs: string[]): string[] {
  const fleet = new Set(refs);
  const subOf = new Map<string, string>();
  for (const sub of runtime.state.subaccounts.values())
    if (sub.externalRef && fleet.has(sub.externalRef)) subOf.set(sub.id, sub.externalRef);
  const active = new Map<string, number>();
  for (const key of runtime.state.apiKeys.values())
    if (key.kind === 'tenant' && key.status === 'active' && key.subaccountId && subOf.has(key.subaccountId))
      active.set(key.subaccountId, (active.get(key.subaccountId) ?? 0) + 1);
  const violations: string[] = [];
  for (const [subId, ref] of subOf) {
    const n = active.get(subId) ?? 0;
    if (n !== 1) violations.push(`${ref}: ${n} active keys on the platform after rotation`);
  }
  return violations.slice(0, 50);
}

/** Every completed rotation revoked its old key after its quiet gate said quiet (never before, never skipped). */
async function quietGateBeforeRevoke(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ ref: string; why: string | null; verdict: string | null }>(
    `SELECT external_ref AS ref, outcome->>'why' AS why, outcome->'quietCheck'->>'verdict' AS verdict
       FROM key_rotations
      WHERE state = 'completed'
        AND (outcome->>'why' IS DISTINCT FROM 'quiet' OR outcome->'quietCheck' IS NULL
             OR deployed_at IS NULL OR finished_at < deployed_at)
      LIMIT 50`,
  );
  return rows.map((r) => `${r.ref}: revoked without a quiet gate (why ${r.why}, verdict ${r.verdict})`);
}

/** Where a rotation's time goes, from its record: begun → deployed → finished (p50 and p90, seconds). */
async function rotationTimeline(pool: Pool): Promise<Record<string, [number, number]>> {
  const { rows } = await pool.query<{ step: string; p50: number; p90: number }>(
    `SELECT step, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY s)::numeric, 2)::float AS p50,
            round(percentile_cont(0.9) WITHIN GROUP (ORDER BY s)::numeric, 2)::float AS p90
       FROM (SELECT 'begun to deployed' AS step, extract(epoch FROM deployed_at - created_at) AS s FROM key_rotations
             UNION ALL
             SELECT 'deployed to finished', extract(epoch FROM finished_at - deployed_at) FROM key_rotations
             UNION ALL
             SELECT 'begun to finished', extract(epoch FROM finished_at - created_at) FROM key_rotations) x
      GROUP BY step`,
  );
  return Object.fromEntries(rows.map((r) => [r.step, [r.p50, r.p90]]));
}

/** Below-floor tenants got exactly one transfer (to `to`), above-floor ones none. */
function topUpTargets(runtime: SimRuntime, belowRefs: string[], aboveRefs: string[]): string[] {
  const refOf = new Map<string, string>();
  for (const sub of runtime.state.subaccounts.values()) if (sub.externalRef) refOf.set(sub.id, sub.externalRef);
  const transfers = new Map<string, number>();
  for (const t of runtime.state.transfers) {
    const ref = refOf.get(t.subaccountId);
    if (ref) transfers.set(ref, (transfers.get(ref) ?? 0) + 1);
  }
  const violations: string[] = [];
  for (const ref of belowRefs)
    if (transfers.get(ref) !== 1) violations.push(`${ref} (below its floor): ${transfers.get(ref) ?? 0} transfers`);
  for (const ref of aboveRefs)
    if (transfers.has(ref)) violations.push(`${ref} (above its floor): ${transfers.get(ref)} transfers`);
  return violations.slice(0, 50);
}

async function topUpsSettled(pool: Pool, expected: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await pool.query<{ done: number; open: number }>(
      `SELECT count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled'))::int AS done,
              count(*) FILTER (WHERE state IN ('pending', 'unknown', 'needs_operator'))::int AS open
         FROM transfer_intents WHERE kind = 'auto'`,
    );
    if (rows[0]!.done >= expected && rows[0]!.open === 0) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

async function startCluster(context: BenchContext): Promise<{ address: string; label: string }> {
  const { infra, log } = context;
  const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-bench-fleet-cluster-'));
  chmodSync(dir, 0o755);
  log('starting a Temporal cluster (server on Postgres)');
  const cluster = await startTemporalCluster({ dataDir: join(dir, 'data'), persistent: false, onProgress: log });
  infra.cleanup.defer('Temporal cluster', () =>
    cluster.stop().finally(() => rmSync(dir, { recursive: true, force: true })),
  );
  await setupNamespace(cluster.address, infra.namespace, log);
  return { address: cluster.address, label: `cluster (${cluster.historyShards} history shards)` };
}

function report(input: {
  results: PhaseResult[];
  tenants: number;
  limit: number;
  options: BenchContext['options'];
  seedSeconds: number;
  idleRssMb: number;
  workerCode: string;
  temporalLabel: string;
  infra: BenchContext['infra'];
}): BenchResult {
  const { results, limit } = input;
  const metrics: Metric[] = [
    { metric: `fleet SEEDED (not onboarded): ${input.tenants} tenants`, value: round1(input.seedSeconds), unit: 's' },
    {
      metric: `workers' PLATFORM_RATE_LIMIT_PER_SECOND (the simulator's limit: ${limit}/s)`,
      value: (limit * input.options.workerBudgetPercent!) / 100,
      unit: '/s',
    },
    {
      metric: `worker RSS idle, before the first phase (largest worker) [${input.workerCode}]`,
      value: input.idleRssMb,
      unit: 'MB',
    },
  ];
  for (const r of results) {
    const f = r.figures;
    const p = r.label;
    const workerCpu = r.cpuMs.worker ?? 0;
    metrics.push(
      {
        metric:
          `${p}: duration (floor ${f.floorSeconds} s = ${r.needed} calls / ${limit}/s` +
          `${r.waitSeconds ? ` + ${r.waitSeconds} s allowance` : ''})`,
        value: round1(r.seconds),
        unit: 's',
      },
      {
        metric: `${p}: duration / floor`,
        value: f.ratioToFloor,
        unit: 'x',
        target: { description: `<= ${FLOOR_FACTOR}`, met: f.ratioToFloor <= FLOOR_FACTOR },
      },
      {
        metric: `${p}: mean request rate (${round1(f.meanOfLimit * 100)}% of limit)`,
        value: f.meanPerSecond,
        unit: '/s',
      },
      {
        metric: `${p}: peak request rate`,
        value: r.traffic.peakRequestsPerSecond,
        unit: '/s',
        target: { description: `<= limit (${limit}/s)`, met: r.traffic.peakRequestsPerSecond <= limit },
      },
      {
        metric: `${p}: requests refused with 429`,
        value: r.traffic.rateLimitedTotal,
        unit: '',
        target: { description: '= 0', met: r.traffic.rateLimitedTotal === 0 },
      },
      { metric: `${p}: requests beyond the needed ${r.needed}`, value: f.extraRequests, unit: '' },
      {
        metric: `${p}: worker RSS peak (of ${r.rss.peakMb.length})`,
        value: Math.max(...r.rss.peakMb),
        unit: 'MB',
        target: { description: `<= ${RSS_TARGET_MB} MB`, met: Math.max(...r.rss.peakMb) <= RSS_TARGET_MB },
      },
      { metric: `${p}: worker RSS at end`, value: Math.max(...r.rss.lastMb), unit: 'MB' },
      {
        metric: `${p}: worker CPU (${coresUsed(workerCpu, r.seconds)} cores)`,
        value: round1(workerCpu / 1000),
        unit: 's',
      },
      ...Object.entries(r.cpuMs)
        .filter(([name]) => name !== 'worker')
        .sort(([, a], [, b]) => b - a)
        .slice(0, 4)
        .map(([name, ms]): Metric => ({
          metric: `${p}: ${name} CPU (${coresUsed(ms, r.seconds)} cores)`,
          value: round1(ms / 1000),
          unit: 's',
        })),
      {
        metric: `${p}: longest fleet workflow run (of ${r.history.runs} runs)`,
        value: r.history.longestRunEvents,
        unit: 'events',
      },
      ...(r.visibility
        ? [
            {
              metric: `${p}: visibility count ${r.visibility.query} (${r.visibility.matched} matched)`,
              value: r.visibility.countMs,
              unit: 'ms',
            },
            { metric: `${p}: visibility full listing of the same`, value: r.visibility.listMs, unit: 'ms' },
          ]
        : []),
      {
        metric: `${p}: exactly-once violations`,
        value: r.violations.length,
        unit: '',
        target: { description: '= 0', met: r.violations.length === 0 },
      },
    );
  }
  if (results.length > 1) {
    const growth = rssGrowthPercent(Math.max(...results[0]!.rss.lastMb), Math.max(...results.at(-1)!.rss.lastMb));
    metrics.push({
      metric: 'worker RSS growth, end of last phase vs end of first',
      value: growth,
      unit: '%',
      target: { description: `<= ${RSS_GROWTH_TARGET_PERCENT}%`, met: growth <= RSS_GROWTH_TARGET_PERCENT },
    });
  }
  return {
    metrics,
    violations: results.flatMap((r) => r.violations.map((v) => `${r.phase}: ${v}`)),
    details: {
      seeded: 'the fleet is SEEDED directly into the simulator and our records (activities called, no onboarding)',
      temporal: input.temporalLabel,
      workerCode: input.workerCode,
      infra: input.infra.sources,
      tenants: input.tenants,
      limit,
      workersBudgetPerSecond: (limit * input.options.workerBudgetPercent!) / 100,
      fleetConcurrency: input.options.fleetConcurrency,
      propagationAllowanceSeconds: input.options.propagationAllowance,
      gatePollIntervalSeconds: input.options.gatePollInterval || null,
      workers: input.options.fleetWorkers,
      seedSeconds: input.seedSeconds,
      phases: results.map(({ violations, ...r }) => ({ ...r, violationsSample: violations.slice(0, 20) })),
    },
  };
}

/**
 * What the workers run: dist/ when it is fresh (as production runs `tenantctl worker`: the prebuilt workflow
 * bundle, no webpack in the worker), or a built dist/ trusted as is with BENCH_WORKER_FROM_DIST=1 (a shared
 * checkout whose sources others edit after `npm run build`), else the sources through tsx.
 */
function workerCodeOf(): { fromDist: boolean; label: string } {
  const state = distState();
  if (state === 'fresh') return { fromDist: true, label: 'dist (compiled)' };
  const built = builtAtMs();
  if (process.env.BENCH_WORKER_FROM_DIST === '1' && built !== undefined)
    return { fromDist: true, label: `dist built ${new Date(built).toISOString()}, trusted` };
  return { fromDist: false, label: `sources via tsx (dist ${state})` };
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
