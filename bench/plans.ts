/**
 * plans — issue 33's benchmark: a new plan version rolled out to a SEEDED fleet of N tenants on a
 * production worker (`tenantctl worker`: main queue plus the platform queue, payload codec on, its
 * PLATFORM_RATE_LIMIT_PER_SECOND the simulator's limit), timed against its floor (the platform calls the
 * rollout needs ÷ the rate limit):
 *
 *   createPlan v1 (default slot, rotation 90d) ─► SEED N active tenants with a `default` key (activities
 *   called directly, no limit), put them on v1 ─► updatePlan v2 (a `ci` slot, rotation 30d) ─► dry run
 *   (previewPlanRollout: Σ platformCallsOf per tenant) ─► switch the limit on, reset the traffic meter
 *   ─► startPlanRollout and wait ─► read the meter ─► exactly-once checks
 *
 * Reported: duration, floor (needed calls ÷ limit; the simulator's own count ÷ limit beside it), the ratio,
 * mean and peak request rate against the limit, 429s, the rollout's totals, where the time went (before the
 * first request, the paced middle, after the last; requests per busy second against the rollout's slot
 * budget, ROLLOUT_BUDGET_SHARE of the limit) and worker RSS and CPU.
 */
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { createActivities } from '../activities/index.js';
import { builtAtMs, distState } from '../bin/dist-fresh.js';
import { startPlanRollout, previewPlanRollout } from '../src/client/plans/plan-rollout.js';
import { createPlan, updatePlan } from '../src/client/plans/plans.js';
import { DEFAULTS } from '../src/config/defaults.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { rotationScheduleId } from '../src/domain/ids.js';
import { platformCallsOf, ROLLOUT_BUDGET_SHARE } from '../src/domain/plan-rollout.js';
import { createLogger } from '../src/infra/log.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY, type SimRuntime } from '../src/sim/index.js';
import { TrafficMeter } from '../src/sim/traffic.js';
import type { RolloutResult } from '../workflows/plan-rollout-messages.js';
import { coresUsed, phaseFigures } from './fleet/floor.js';
import { benchClient, sampleWorkersRss, startFleetWorkers } from './fleet/workers.js';
import { limitPlatform, seedActiveTenants, startFleetSimulator } from './lib/fleet.js';
import { descendantsCpuMs } from './lib/process-cpu.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';

const PLAN = 'bench';
const NEW_SLOT = 'ci';
const DAY_MS = 24 * 3600 * 1000;

export const plansBenchmark: Benchmark = {
  name: 'plans',
  description: 'a plan version rolled out to a SEEDED fleet under the platform rate limit, against its floor',
  options: [
    { flags: '--tenants <n>', description: 'tenants in the fleet', defaultValue: 1000 },
    {
      flags: '--rate-limit <n>',
      description:
        "the simulator's global limit, requests per second (also the workers' PLATFORM_RATE_LIMIT_PER_SECOND)",
      defaultValue: DEFAULTS.PLATFORM_RATE_LIMIT_PER_SECOND,
    },
    {
      flags: '--rollout-concurrency <n>',
      description: 'plans: tenants converging at once (the rollout concurrency)',
      defaultValue: 50,
    },
    { flags: '--rollout-page-size <n>', description: 'plans: tenants per rollout page', defaultValue: 500 },
  ],
  run,
};

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const tenants = options.tenants!;
  const limit = options.rateLimit!;
  const tag = Date.now().toString(36);

  const { runtime, simBase } = await startFleetSimulator(infra.cleanup, 'plans', options.latencyMs ?? 0);
  const databaseUrl = await infra.freshDatabase('plans');
  const pool = createPool(databaseUrl, { applicationName: 'tenant-orchestrator-bench', max: 20 });
  infra.cleanup.defer('plans pool', () => pool.end());
  const secretsKeys = generateMasterKey('benchplans');
  const activities = createActivities({
    pool,
    platform: createPlatformClient({ baseUrl: simBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 10_000 }),
    vault: createVault(parseMasterKeys(secretsKeys)),
    logger: createLogger({ level: 'warn' }),
  });

  await createPlanV1(pool);
  const refs = Array.from({ length: tenants }, (_, i) => `plan-${tag}-${String(i).padStart(5, '0')}`);
  log(`SEEDING ${tenants} active tenants on ${PLAN}@1 directly (activities called, no workflows, no rate limit)`);
  const seedStarted = performance.now();
  await seedActiveTenants(activities, refs);
  await putOnPlanV1(pool, refs);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  log(`seeded in ${seedSeconds.toFixed(1)} s`);
  await addCiSlot(pool);
  const needed = await dryRunCalls(pool, tenants);
  log(`dry run: ${needed.tenants} tenants to change, ${needed.calls} platform calls (platformCallsOf)`);

  const taskQueue = `bench-plans-${process.pid}`;
  const workerCode = workerCodeOf();
  const workers = await startFleetWorkers(
    infra.cleanup,
    1,
    {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: infra.temporalAddress,
      TEMPORAL_NAMESPACE: infra.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PLATFORM_BASE_URL: simBase,
      PLATFORM_API_KEY: DEFAULT_PLATFORM_KEY,
      PLATFORM_RATE_LIMIT_PER_SECOND: String(limit),
      SECRETS_KEYS: secretsKeys,
      PAYLOAD_CODEC: 'on',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      DATA_DIR: '/nonexistent-bench-stack-dir',
      ...(workerCode.fromDist ? { TENANTCTL_FROM_DIST: '1' } : {}),
    },
    (line) => log(line),
  );
  const client = await benchClient(infra.cleanup, 'plans', {
    address: infra.temporalAddress,
    namespace: infra.namespace,
    secretsKeys,
  });
  const idleRssMb = Math.max(...workers.rssMb());

  limitPlatform(runtime, limit);
  runtime.traffic = new TrafficMeter();
  const concurrency = options.rolloutConcurrency!;
  const pageSize = options.rolloutPageSize!;
  log(
    `rollout of ${PLAN}@2 to ${tenants} tenants: concurrency ${concurrency}, pages of ${pageSize}, ` +
      `limit ${limit}/s; floor ${(needed.calls / limit).toFixed(1)} s`,
  );
  const series = sampleRequests(runtime);
  const rss = sampleWorkersRss(workers);
  const cpuBefore = descendantsCpuMs();
  const started = performance.now();
  const { workflowId, result } = await rollOut(client, pool, { concurrency, pageSize, taskQueue });
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = descendantsCpuMs();
  const rssSeen = rss.stop();
  const perSecond = series.stop();
  const traffic = runtime.traffic.snapshot();

  const figures = phaseFigures({
    seconds,
    requests: traffic.requestsTotal,
    peakPerSecond: traffic.peakRequestsPerSecond,
    limit,
    neededCalls: needed.calls,
  });
  const where = timeSplit(perSecond, seconds, limit, needed);
  const workerCpuMs = Math.round((cpuAfter['worker'] ?? 0) - (cpuBefore['worker'] ?? 0));
  log(
    `${seconds.toFixed(1)} s = ${figures.ratioToFloor} x floor (${figures.floorSeconds} s); mean ` +
      `${figures.meanPerSecond}/s, peak ${traffic.peakRequestsPerSecond}/s of ${limit}/s, ` +
      `${traffic.rateLimitedTotal} x 429, ${traffic.requestsTotal} requests; totals ${JSON.stringify(result.totals)}`,
  );
  log(`where the time went: ${JSON.stringify(where)}`);

  const violations = [...(await checkExactlyOnce(pool, runtime, refs)), ...(await checkSchedules(client, refs))];
  if (result.totals.converged !== tenants)
    violations.push(`rollout totals ${JSON.stringify(result.totals)} (expected ${tenants} converged)`);

  const history = await rolloutHistory(client, workflowId);
  log(`the rollout's own timeline: ${JSON.stringify(history)}`);
  const round1 = (n: number) => Math.round(n * 10) / 10;
  return {
    metrics: [
      { metric: `rollout of ${tenants} tenants at ${limit}/s`, value: round1(seconds), unit: 's' },
      { metric: 'floor (needed calls / limit)', value: figures.floorSeconds, unit: 's' },
      { metric: 'duration / floor', value: figures.ratioToFloor, unit: 'x' },
      { metric: 'mean platform request rate', value: figures.meanPerSecond, unit: '/s' },
      {
        metric: 'peak platform request rate',
        value: traffic.peakRequestsPerSecond,
        unit: '/s',
        target: { description: `<= limit (${limit}/s)`, met: traffic.peakRequestsPerSecond <= limit },
      },
      {
        metric: 'requests refused with 429',
        value: traffic.rateLimitedTotal,
        unit: '',
        target: { description: '= 0', met: traffic.rateLimitedTotal === 0 },
      },
      {
        metric: 'requests beyond the needed ones',
        value: figures.extraRequests,
        unit: '',
        target: { description: '= 0', met: figures.extraRequests === 0 },
      },
      { metric: 'tenants converged', value: result.totals.converged, unit: '' },
      { metric: 'worker peak RSS', value: Math.max(...rssSeen.peakMb), unit: 'MB' },
      { metric: 'worker CPU (share of a core)', value: coresUsed(workerCpuMs, seconds), unit: '' },
    ],
    violations,
    details: {
      tenants,
      limit,
      concurrency,
      pageSize,
      budgetShare: ROLLOUT_BUDGET_SHARE,
      seedSeconds: round1(seedSeconds),
      seconds,
      neededCalls: needed.calls,
      figures,
      measuredFloorSeconds: round1(traffic.requestsTotal / limit),
      totals: result.totals,
      held: result.held,
      failed: result.failed,
      traffic,
      where,
      requestsPerSecond: perSecond,
      workerCode: workerCode.label,
      worker: { idleRssMb, rss: rssSeen, cpuMs: workerCpuMs },
      history,
    },
  };
}

/** Plan v1: the `default` slot, rotated every 90d. */
export async function createPlanV1(pool: Pool, plan = PLAN): Promise<void> {
  await createPlan(
    pool,
    { name: plan, keySlots: ['default'], rotation: { interval: '90d' }, reason: 'bench fleet plan' },
    { actor: 'bench' },
  );
}

/**
 * Puts seeded tenants on v1 in our records alone: no platform call and no key touched. v1's one slot is
 * `default`, which every seeded tenant holds as active whatever its generation (2 once the fleet bench rotated it).
 */
export async function putOnPlanV1(pool: Pool, refs: string[], plan = PLAN): Promise<void> {
  await pool.query(`UPDATE tenants SET plan_name = $1::text, plan_version = 1 WHERE external_ref = ANY($2::text[])`, [
    plan,
    refs,
  ]);
}

/** Plan v2: a `ci` slot beside `default`, rotated every 30d. */
export async function addCiSlot(pool: Pool, plan = PLAN): Promise<void> {
  await updatePlan(
    pool,
    plan,
    { keySlots: ['default', NEW_SLOT], rotation: { interval: '30d' }, reason: 'a key for CI, rotated monthly' },
    { actor: 'bench' },
  );
}

/** Starts the rollout of the plan's latest version and waits for its end. */
export async function rollOut(
  client: Client,
  pool: Pool,
  input: { plan?: string; concurrency: number; pageSize: number; taskQueue: string },
): Promise<{ workflowId: string; result: RolloutResult }> {
  const { plan = PLAN, concurrency, pageSize, taskQueue } = input;
  const start = await startPlanRollout(
    client,
    pool,
    { plan, concurrency, pageSize, reason: 'bench rollout' },
    { actor: 'bench', taskQueue },
  );
  const result = (await client.workflow.getHandle(start.workflowId).result()) as RolloutResult;
  return { workflowId: start.workflowId, result };
}

/** The dry run over every page: tenants with something to change and the platform calls they need. */
export async function dryRunCalls(
  pool: Pool,
  expected: number,
  plan = PLAN,
): Promise<{ tenants: number; calls: number }> {
  let tenants = 0;
  let calls = 0;
  let after: string | undefined;
  for (;;) {
    const page = await previewPlanRollout(pool, { plan, limit: 500, ...(after ? { after } : {}) });
    for (const tenant of page.tenants) {
      tenants += 1;
      calls += platformCallsOf(tenant.changes);
    }
    if (page.next === null) break;
    after = page.next;
  }
  if (tenants !== expected) throw new Error(`the dry run lists ${tenants} tenants, ${expected} were seeded`);
  return { tenants, calls };
}

/** Requests the platform counted (and refused with 429) in each second of the phase, sampled every 100 ms. */
function sampleRequests(runtime: SimRuntime): { stop(): { requests: number[]; refused: number[] } } {
  const started = performance.now();
  const requests: number[] = [];
  const refused: number[] = [];
  let last = { requestsTotal: 0, rateLimitedTotal: 0 };
  const sample = () => {
    const now = runtime.traffic.snapshot();
    const second = Math.floor((performance.now() - started) / 1000);
    requests[second] = (requests[second] ?? 0) + now.requestsTotal - last.requestsTotal;
    refused[second] = (refused[second] ?? 0) + now.rateLimitedTotal - last.rateLimitedTotal;
    last = now;
  };
  const timer = setInterval(sample, 100);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { requests: Array.from(requests, (n) => n ?? 0), refused: Array.from(refused, (n) => n ?? 0) };
    },
  };
}

/**
 * Where the phase's time went: before the platform's first request (start, first page, first reads), the paced
 * middle (first to last request), after the last (the last tenants' records and schedules, the result), and in the
 * middle how full the seconds were against the rollout's slot budget (ROLLOUT_BUDGET_SHARE of the limit).
 */
function timeSplit(
  { requests: perSecond, refused }: { requests: number[]; refused: number[] },
  seconds: number,
  limit: number,
  needed: { tenants: number; calls: number },
): Record<string, number> {
  const first = perSecond.findIndex((n) => n > 0);
  let last = perSecond.length - 1;
  while (last > 0 && perSecond[last] === 0) last -= 1;
  const middle = first < 0 ? [] : perSecond.slice(first, last + 1);
  const busy = middle.filter((n) => n > 0);
  const callsPerTenant = needed.tenants > 0 ? needed.calls / needed.tenants : 0;
  const slotBudget = limit * ROLLOUT_BUDGET_SHARE;
  const tenantsPerSlot = callsPerTenant > 0 ? Math.floor(slotBudget / callsPerTenant) : 0;
  const round1 = (n: number) => Math.round(n * 10) / 10;
  return {
    beforeFirstRequestS: first < 0 ? seconds : first,
    /** The second of the first 429 (-1: none) and the seconds with any. */
    first429AtS: refused.findIndex((n) => n > 0),
    secondsWith429: refused.filter((n) => n > 0).length,
    pacedSeconds: middle.length,
    afterLastRequestS: first < 0 ? 0 : round1(Math.max(0, seconds - (last + 1))),
    secondsWithoutRequests: middle.length - busy.length,
    meanPerBusySecond: busy.length ? round1(busy.reduce((a, b) => a + b, 0) / busy.length) : 0,
    slotBudgetPerSecond: slotBudget,
    tenantsPerSlot,
    /** The rollout's own floor: every second a full slot of tenants. */
    pacedFloorS: tenantsPerSlot > 0 ? round1(needed.tenants / tenantsPerSlot) : Number.NaN,
  };
}

/**
 * Each tenant: on v2; exactly one `ci` key, active; its `default` key still active; no key revoked by the
 * rollout (`revokedBefore`: the keys each had revoked before it, 1 after the fleet bench's rotation); one
 * tenant.plan_changed v1→v2. On the platform: two active keys per sub-account, and only those revoked before.
 */
export async function checkExactlyOnce(
  pool: Pool,
  runtime: SimRuntime,
  refs: string[],
  { plan = PLAN, revokedBefore = 0 }: { plan?: string; revokedBefore?: number } = {},
): Promise<string[]> {
  const { rows } = await pool.query<{
    ref: string;
    plan: string;
    ci: string;
    defaults: string;
    revoked: string;
    events: string;
  }>(
    `SELECT t.external_ref AS ref, t.plan_name || '@' || t.plan_version AS plan,
            (SELECT string_agg(k.generation || ':' || k.status, ',') FROM tenant_keys k
              WHERE k.external_ref = t.external_ref AND k.slot = $2::text) AS ci,
            (SELECT count(*) FROM tenant_keys k
              WHERE k.external_ref = t.external_ref AND k.slot = 'default' AND k.status = 'active') AS defaults,
            (SELECT count(*) FROM tenant_keys k
              WHERE k.external_ref = t.external_ref AND k.status <> 'active') AS revoked,
            (SELECT count(*) FROM event_outbox e
              WHERE e.type = 'tenant.plan_changed' AND e.external_ref = t.external_ref
                AND (e.payload->'from'->>'version')::int = 1 AND (e.payload->'to'->>'version')::int = 2) AS events
       FROM tenants t WHERE t.external_ref = ANY($1::text[])`,
    [refs, NEW_SLOT],
  );
  const violations: string[] = [];
  if (rows.length !== refs.length) violations.push(`${rows.length} of ${refs.length} tenants found`);
  for (const r of rows) {
    const wrong = [
      r.plan !== `${plan}@2` ? `on ${r.plan}` : '',
      r.ci !== '1:active' ? `${NEW_SLOT} keys ${r.ci ?? 'none'}` : '',
      r.defaults !== '1' ? `${r.defaults} active default keys` : '',
      r.revoked !== String(revokedBefore) ? `${r.revoked} keys not active (${revokedBefore} before)` : '',
      r.events !== '1' ? `${r.events} tenant.plan_changed v1→v2` : '',
    ].filter(Boolean);
    if (wrong.length) violations.push(`${r.ref}: ${wrong.join(', ')}`);
  }

  const fleet = new Set(refs);
  const subs = new Set<string>();
  for (const sub of runtime.state.subaccounts.values())
    if (sub.externalRef && fleet.has(sub.externalRef)) subs.add(sub.id);
  const keys = new Map<string, { active: number; revoked: number }>();
  for (const key of runtime.state.apiKeys.values()) {
    if (key.kind !== 'tenant' || !key.subaccountId || !subs.has(key.subaccountId)) continue;
    const seen = keys.get(key.subaccountId) ?? { active: 0, revoked: 0 };
    seen[key.status] += 1;
    keys.set(key.subaccountId, seen);
  }
  for (const sub of subs) {
    const seen = keys.get(sub) ?? { active: 0, revoked: 0 };
    if (seen.active !== 2 || seen.revoked !== revokedBefore)
      violations.push(`sub-account ${sub}: ${seen.active} active and ${seen.revoked} revoked keys on the platform`);
  }
  return violations.slice(0, 50);
}

/** A sample (first, middle, last tenant): both slots' rotation schedules at the new interval. */
export async function checkSchedules(client: Client, refs: string[]): Promise<string[]> {
  const violations: string[] = [];
  for (const ref of [refs[0]!, refs[Math.floor(refs.length / 2)]!, refs[refs.length - 1]!])
    for (const slot of ['default', NEW_SLOT]) {
      const every = await client.schedule
        .getHandle(rotationScheduleId(ref, slot))
        .describe()
        .then((d) => d.spec.intervals?.[0]?.every)
        .catch((error: unknown) => (error as Error).message);
      if (every !== 30 * DAY_MS) violations.push(`${ref} ${slot} schedule: every ${String(every)}`);
    }
  return violations;
}

/**
 * The rollout's runs (one per page), read from their histories: how long its pacing timers were asked for and
 * how long they took (a Temporal timer fires no sooner than about a second), tenants started per slot, how many
 * were in flight at most (the concurrency), how long a tenant's convergence took, and how long the rollout's
 * own workflow tasks waited to be picked up.
 */
async function rolloutHistory(client: Client, workflowId: string): Promise<Record<string, number>> {
  let runs = 0;
  let longestRunEvents = 0;
  const timers = { count: 0, askedMs: 0, tookMs: 0 };
  const childMs: number[] = [];
  const wftWaitMs: number[] = [];
  let children = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    runs += 1;
    const events = (await client.workflow.getHandle(workflowId, execution.runId).fetchHistory()).events ?? [];
    longestRunEvents = Math.max(longestRunEvents, events.length);
    const at = new Map<number, number>();
    const childStarted = new Map<number, number>();
    for (const event of events) {
      const id = Number(event.eventId);
      const time = tsToMs(event.eventTime);
      at.set(id, time);
      if (event.timerStartedEventAttributes) {
        timers.count += 1;
        timers.askedMs += tsToMs(event.timerStartedEventAttributes.startToFireTimeout);
      } else if (event.timerFiredEventAttributes) {
        timers.tookMs += time - (at.get(Number(event.timerFiredEventAttributes.startedEventId)) ?? time);
      } else if (event.startChildWorkflowExecutionInitiatedEventAttributes) {
        children += 1;
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        childStarted.set(id, time);
      } else if (event.childWorkflowExecutionCompletedEventAttributes) {
        inFlight -= 1;
        const initiated = Number(event.childWorkflowExecutionCompletedEventAttributes.initiatedEventId);
        childMs.push(time - (childStarted.get(initiated) ?? time));
      } else if (event.workflowTaskStartedEventAttributes) {
        wftWaitMs.push(time - (at.get(Number(event.workflowTaskStartedEventAttributes.scheduledEventId)) ?? time));
      }
    }
  }
  const pct = (list: number[], p: number) => [...list].sort((a, b) => a - b)[Math.floor((list.length - 1) * p)] ?? 0;
  const round1 = (n: number) => Math.round(n * 10) / 10;
  return {
    runs,
    longestRunEvents,
    pacingTimers: timers.count,
    timersAskedS: round1(timers.askedMs / 1000),
    timersTookS: round1(timers.tookMs / 1000),
    tenantsPerSlot: round1(children / (timers.count + runs)),
    maxInFlight,
    convergeP50S: round1(pct(childMs, 0.5) / 1000),
    convergeP90S: round1(pct(childMs, 0.9) / 1000),
    workflowTasks: wftWaitMs.length,
    workflowTaskWaitS: round1(wftWaitMs.reduce((a, b) => a + b, 0) / 1000),
  };
}

/** The worker from a built dist/ when it is fresh (or BENCH_WORKER_FROM_DIST=1), else the sources via tsx. */
function workerCodeOf(): { fromDist: boolean; label: string } {
  const state = distState();
  if (state === 'fresh') return { fromDist: true, label: 'dist (compiled)' };
  const built = builtAtMs();
  if (process.env.BENCH_WORKER_FROM_DIST === '1' && built !== undefined)
    return { fromDist: true, label: `dist built ${new Date(built).toISOString()}, trusted` };
  return { fromDist: false, label: `sources via tsx (dist ${state})` };
}
