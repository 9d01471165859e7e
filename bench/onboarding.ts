/**
 * onboarding — issue 4's benchmark: onboardTenant against the floor (the same platform calls and
 * records made by a plain loop) and against a bare three-activity workflow, all in one run on the
 * same infrastructure, with the simulator adding a fixed latency to every platform call.
 *
 *   floor (calls only, activities direct) ─► onboardTenant sequential ─► onboardTenant concurrent
 *   ─► bare three local activities ─► bare three regular activities ─► exactly-once checks
 *   ─► tenantctl --help / status timings
 *
 * The throughput target is also set against the CPU (bench/onboarding/throughput-ceiling.ts): the ceiling
 * that this run's CPU per onboarding puts on throughput, and the CPU per onboarding the target allows
 * (printed when the bench runs its own dev server and embedded Postgres, so that all their CPU is counted).
 *
 * Sequential runs use a worker in this process (eager starts: the least latency); throughput runs
 * use a worker in its own process, so its RSS and CPU are its own and the client's are apart.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  sampleRss,
  type ConcurrentRun,
  type CpuMeasured,
  type LatencySummary,
  runConcurrent,
  runSequential,
  withCpu,
} from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult, Metric } from './lib/types.js';
import type { WorkerTuning } from './lib/worker.js';
import { profileHistories, verifyOnboardings } from './onboarding/checks.js';
import { bareRunner, newStartCounter, onboardingRunner, type BareKind } from './onboarding/drivers.js';
import { startCliGateway, timeCli } from './onboarding/cli-timings.js';
import { floorRunners } from './onboarding/floor.js';
import { runClusterPhases } from './onboarding/cluster.js';
import { startWorkerProcess } from './onboarding/worker-process.js';
import { throughputCeilingMetrics } from './onboarding/throughput-ceiling.js';
import { launchedSemiSpaceMb } from '../src/infra/worker-node-flags.js';
import { heapGrowthLabel } from '../src/main/wiring/worker-heap.js';
import { createOnboardingWorld, type OnboardingWorld } from './onboarding/world.js';
import { statementStats, type StatementStat } from './lib/statement-stats.js';
import { onboardingWorkflowId } from '../src/domain/ids.js';

const FUNDING_MICRO_USD = '1000000';
// Issue 20's targets (a benchmark, not a timed test: a missed one is a measurement).
const FLOOR_FACTOR = 1.2;
const THROUGHPUT_FACTOR = 1.5;
const CPU_FACTOR = 1.5;
const RSS_TARGET_MB = 300;
// Issue 34's onboarding targets: sequential p50 against the calls-only floor on a quiet machine, the worker's RSS
// at 500 in flight, and the worker process's own CPU per onboarding against the same activities in a plain loop
// (41–47 ms against about 27 ms when the issue was filed: 1.5–1.7 x; the target is below that range).
const QUIET_FLOOR_FACTOR = 1.1;
const RSS_AT_500_TARGET_MB = 250;
const WORKER_CPU_FACTOR = 1.5;
const MAX_HISTORY_EVENTS = 16;
const CLI_HELP_TARGET_MS = 400;
const CLI_STATUS_TARGET_MS = 800;

export const onboardingBenchmark: Benchmark = {
  name: 'onboarding',
  description: 'onboardTenant vs the floor and a bare three-activity workflow',
  options: [
    { flags: '--latency-ms <n>', description: 'simulated latency added to every platform call', defaultValue: 25 },
    { flags: '--sequential <n>', description: 'timed runs one after another (p50/p99)', defaultValue: 30 },
    { flags: '--warmup <n>', description: 'untimed runs before each sequential series', defaultValue: 5 },
    { flags: '--count <n>', description: 'workflows in each throughput run', defaultValue: 1000 },
    {
      flags: '--concurrency <n>',
      description: 'workflows in flight at once in each throughput run',
      defaultValue: 1000,
    },
    {
      flags: '--max-cached-workflows <n>',
      description: 'worker sticky cache size (0: SDK default)',
      defaultValue: 2000,
    },
    { flags: '--wft-slots <n>', description: 'maxConcurrentWorkflowTaskExecutions (0: SDK default)', defaultValue: 0 },
    { flags: '--la-slots <n>', description: 'maxConcurrentLocalActivityExecutions (0: SDK default)', defaultValue: 0 },
    { flags: '--wft-pollers <n>', description: 'maxConcurrentWorkflowTaskPolls (0: SDK default)', defaultValue: 0 },
    {
      flags: '--cluster-count <n>',
      description: 'with --cluster: onboardings in each worker-process phase',
      defaultValue: 300,
    },
    {
      flags: '--cluster-concurrency <n>',
      description: 'with --cluster: onboardings in flight in each worker-process phase',
      defaultValue: 100,
    },
  ],
  run,
};

/**
 * Only the sticky cache is set by default. Every onboarding step is a local activity, so one
 * workflow task stays open for the whole run and the 40 default workflow-task slots are also the
 * number of onboardings in progress: that is the worker's back-pressure. Measured here with
 * `--wft-slots 500 --la-slots 300`: 4.4/s instead of 16/s, 2.4 GB RSS, timeouts and retried calls.
 */
function tuningOf(options: BenchContext['options']): WorkerTuning {
  const tuning: WorkerTuning = {};
  if (options.maxCachedWorkflows) tuning.maxCachedWorkflows = options.maxCachedWorkflows;
  if (options.wftSlots) tuning.maxConcurrentWorkflowTaskExecutions = options.wftSlots;
  if (options.laSlots) tuning.maxConcurrentLocalActivityExecutions = options.laSlots;
  if (options.wftPollers) tuning.maxConcurrentWorkflowTaskPolls = options.wftPollers;
  return tuning;
}

async function run(context: BenchContext): Promise<BenchResult> {
  const { options, log, infra } = context;
  const n = options.sequential!;
  const warmup = options.warmup!;
  const count = options.count!;
  const concurrency = options.concurrency!;
  const tag = Date.now().toString(36);
  const tuning = tuningOf(options);
  const world = await createOnboardingWorld(context, tuning);
  const inProcess = { taskQueue: world.taskQueue, eager: true };

  log(`floor: ${n} sequential, calls only, then activities called directly`);
  const floor = floorRunners(world, FUNDING_MICRO_USD);
  const floorCalls = await withCpu(n + warmup, () =>
    runSequential(n, warmup, (i) => floor.callsOnly(`floor-${tag}-calls-${i}`)),
  );
  const statementsBeforeFloor = world.postgresStatements();
  const floorDirect = await withCpu(n + warmup, () =>
    runSequential(n, warmup, (i) => floor.activitiesDirect(`floor-${tag}-acts-${i}`)),
  );

  const floorStatements = (world.postgresStatements() - statementsBeforeFloor) / (n + warmup);
  const timings: Record<string, unknown> = { floorActivitiesDirectMeanMs: floor.meanStepMs() };
  log(`onboardTenant: ${n} sequential (worker in this process, eager starts)`);
  const starts = {
    sequential: newStartCounter(),
    concurrent: newStartCounter(),
    bareLocal: newStartCounter(),
    bareRegular: newStartCounter(),
  };
  const onboardSequential = onboardingRunner(world, FUNDING_MICRO_USD, starts.sequential, inProcess);
  const seqRefs = Array.from({ length: warmup + n }, (_, i) => `bench-${tag}-seq-${i}`);
  const sequential = await withCpu(n + warmup, () => runSequential(n, warmup, (i) => onboardSequential(seqRefs[i]!)));
  timings.onboardTenantSequential = world.activityTimings.take();

  log('starting the throughput worker in its own process');
  const workerProcess = await startWorkerProcess(world, context, tuning);
  const apart = { taskQueue: workerProcess.taskQueue, eager: false };
  const workerIdleRssMb = workerProcess.rssMb();
  log(`onboardTenant: ${count} with ${concurrency} in flight (worker process ${workerProcess.pid})`);
  const concRefs = Array.from({ length: count }, (_, i) => `bench-${tag}-c-${i}`);
  const statsBefore = await world.sim.stats();
  const statementsBefore = await workerProcess.statements();
  // BENCH_PG_STAT_STATEMENTS=1: what Postgres spent on each statement of the throughput phase.
  const pgStats = infra.statementStats ? await statementStats(world.wiring.databaseUrl) : undefined;
  await pgStats?.reset();
  const concurrentRss = sampleRss(workerProcess.rssMb);
  const onboardConcurrent = onboardingRunner(world, FUNDING_MICRO_USD, starts.concurrent, apart);
  const concurrent = await withCpu(count, () =>
    runConcurrent(count, concurrency, (i) => onboardConcurrent(concRefs[i]!)),
  );
  const workerRss = concurrentRss.stop();
  const statsAfter = await world.sim.stats();
  const statementsPerOnboarding = ((await workerProcess.statements()) - statementsBefore) / count;
  const byStatement = await pgStats?.read(count);
  await pgStats?.close();
  if (byStatement) log(`Postgres per onboarding, by statement:\n${statementTable(byStatement)}`);
  const callsPerOnboarding = (statsAfter.requestsTotal - statsBefore.requestsTotal) / count;
  const callsByRoute = Object.fromEntries(
    Object.entries(statsAfter.byRoute).map(([route, total]) => [
      route,
      (total - (statsBefore.byRoute[route] ?? 0)) / count,
    ]),
  );

  const histories = await profileHistories(
    world.client,
    [seqRefs[warmup], seqRefs.at(-1), concRefs[0], concRefs.at(-1)].map((ref) => onboardingWorkflowId(String(ref))),
  );
  const eventsPerWorkflow = histories.reduce((sum, h) => sum + h.events, 0) / histories.length;

  const bare = {} as Record<
    BareKind,
    {
      sequential: CpuMeasured<LatencySummary>;
      concurrent: CpuMeasured<ConcurrentRun>;
      rss: { peakMb: number; lastMb: number };
    }
  >;
  for (const kind of ['local', 'regular'] as const) {
    log(
      `bare three ${kind} activities: ${n} sequential (in process), then ${count} with ` +
        `${concurrency} in flight (worker process)`,
    );
    const counter = kind === 'local' ? starts.bareLocal : starts.bareRegular;
    const sequentialRun = bareRunner(world, kind, options.latencyMs!, counter, inProcess);
    const concurrentRun = bareRunner(world, kind, options.latencyMs!, counter, apart);
    const seq = await withCpu(n + warmup, () =>
      runSequential(n, warmup, (i) => sequentialRun(`bare-${kind}-${tag}-seq-${i}`)),
    );
    const rss = sampleRss(workerProcess.rssMb);
    const conc = await withCpu(count, () =>
      runConcurrent(count, concurrency, (i) => concurrentRun(`bare-${kind}-${tag}-c-${i}`)),
    );
    bare[kind] = { sequential: seq, concurrent: conc, rss: rss.stop() };
  }
  timings.bare = world.activityTimings.take();
  const bareHistories = await profileHistories(world.client, [`bare-local-${tag}-c-0`, `bare-regular-${tag}-c-0`]);
  await workerProcess.stop();

  log('checking exactly-once effects in the simulator and Postgres');
  const checkStarted = performance.now();
  const violations = await verifyOnboardings(world, [...seqRefs, ...concRefs], FUNDING_MICRO_USD);
  log(
    `checked ${seqRefs.length + concRefs.length} onboardings in ` +
      `${Math.round(performance.now() - checkStarted)} ms: ${violations.length} ` +
      `violations`,
  );
  const onCluster = options.cluster ? await runClusterPhases(context) : undefined;

  log('timing tenantctl --help and tenantctl status against this stack and a gateway over it (10 each)');
  const gateway = await startCliGateway(world, context);
  const cli = await timeCli(
    { databaseUrl: world.wiring.databaseUrl, temporalAddress: infra.temporalAddress, namespace: infra.namespace },
    seqRefs.at(-1)!,
    gateway,
  );
  await gateway.close();

  const floorP50 = floorCalls.p50;
  const throughputTarget = THROUGHPUT_FACTOR * bare.regular.concurrent.perSecond;
  const cpuTotal = totalCpu(concurrent);
  const cpuFloor = totalCpu(floorDirect);
  const seqOverFloor = ratio(sequential.p50, floorCalls.p50);
  // Issue 34 grades the RSS at 500 in flight (250 MB); more in flight keeps issue 20's 300 MB.
  const rssTargetMb = concurrency <= 500 ? RSS_AT_500_TARGET_MB : RSS_TARGET_MB;
  const rssTargetOf = concurrency <= 500 ? ' (issue 34, at 500 in flight)' : '';
  const workerCpuMs = concurrent.otherProcessesCpuMsPerRun['worker process'] ?? Number.NaN;
  const floorLoopCpuMs = floorDirect.cpuMsPerRun;
  const workerCpuRatio = ratio(workerCpuMs, floorLoopCpuMs);
  const metrics: Metric[] = [
    { metric: 'floor: calls only p50', value: floorCalls.p50, unit: 'ms' },
    { metric: 'floor: calls only p99', value: floorCalls.p99, unit: 'ms' },
    { metric: 'floor: activities direct p50 (calls + our records)', value: floorDirect.p50, unit: 'ms' },
    { metric: 'floor: activities direct p99', value: floorDirect.p99, unit: 'ms' },
    {
      metric: `onboardTenant sequential p50 (n=${n})`,
      value: sequential.p50,
      unit: 'ms',
      target: {
        description: `<= ${FLOOR_FACTOR} x calls-only floor (${(FLOOR_FACTOR * floorP50).toFixed(1)} ms)`,
        met: sequential.p50 <= FLOOR_FACTOR * floorP50,
      },
    },
    { metric: `onboardTenant sequential p99 (n=${n})`, value: sequential.p99, unit: 'ms' },
    {
      metric: 'onboardTenant / calls-only floor (p50)',
      value: seqOverFloor,
      unit: 'x',
      target: {
        description: `<= ${QUIET_FLOOR_FACTOR} x on a quiet machine (issue 34)`,
        met: seqOverFloor <= QUIET_FLOOR_FACTOR,
      },
    },
    {
      metric: 'onboardTenant / activities-direct floor (p50)',
      value: ratio(sequential.p50, floorDirect.p50),
      unit: 'x',
    },
    {
      metric: `onboardTenant throughput (${count}, ${concurrency} in flight)`,
      value: concurrent.perSecond,
      unit: '/s',
      target: {
        description: `>= ${THROUGHPUT_FACTOR} x bare regular (${throughputTarget.toFixed(1)}/s)`,
        met: concurrent.perSecond >= throughputTarget,
      },
    },
    {
      metric: 'onboardTenant / bare regular (throughput)',
      value: ratio(concurrent.perSecond, bare.regular.concurrent.perSecond),
      unit: 'x',
    },
    { metric: `onboardTenant p50 at ${concurrency} in flight`, value: concurrent.latency.p50, unit: 'ms' },
    { metric: `onboardTenant p99 at ${concurrency} in flight`, value: concurrent.latency.p99, unit: 'ms' },
    {
      metric: 'platform calls per onboarding',
      value: Math.round(callsPerOnboarding * 100) / 100,
      unit: '',
      target: { description: '= 4 (the floor)', met: callsPerOnboarding === 4 },
    },
    { metric: 'Postgres statements per onboarding', value: Math.round(statementsPerOnboarding * 10) / 10, unit: '' },
    { metric: 'Postgres statements per floor run', value: Math.round(floorStatements * 10) / 10, unit: '' },
    {
      metric: 'history events per workflow',
      value: eventsPerWorkflow,
      unit: '',
      target: { description: `<= ${MAX_HISTORY_EVENTS}`, met: eventsPerWorkflow <= MAX_HISTORY_EVENTS },
    },
    {
      metric: 'workflow tasks per workflow',
      value: histories.reduce((s, h) => s + h.workflowTasks, 0) / histories.length,
      unit: '',
    },
    {
      metric: `worker RSS idle, before the throughput phases (worker process alone) [${workerProcess.code}]`,
      value: workerIdleRssMb,
      unit: 'MB',
    },
    {
      metric:
        `worker RSS peak at ${concurrency} in flight ` +
        `(worker process alone, ${heapGrowthLabel(workerProcess.heapGrowingPercent, launchedSemiSpaceMb(workerProcess.nodeFlags, undefined))})`,
      value: workerRss.peakMb,
      unit: 'MB',
      target: { description: `<= ${rssTargetMb} MB${rssTargetOf}`, met: workerRss.peakMb <= rssTargetMb },
    },
    {
      metric: 'eager starts, sequential',
      value: percentOf(starts.sequential.eager, starts.sequential.started),
      unit: '%',
    },
    {
      metric: `CPU per onboarding, all processes, ${concurrency} in flight`,
      value: cpuTotal,
      unit: 'ms',
      target: {
        description: `<= ${CPU_FACTOR} x floor run (${(CPU_FACTOR * cpuFloor).toFixed(1)} ms)`,
        met: cpuTotal <= CPU_FACTOR * cpuFloor,
      },
    },
    ...perProcess(`CPU per onboarding, ${concurrency} in flight`, concurrent, 'bench client'),
    {
      metric: `worker process CPU per onboarding (${concurrency} in flight) / the floor loop's CPU per run`,
      value: workerCpuRatio,
      unit: 'x',
      target: {
        description: `<= ${WORKER_CPU_FACTOR} x (issue 34: ${workerCpuMs.toFixed(1)} / ${floorLoopCpuMs.toFixed(1)} ms)`,
        met: workerCpuRatio <= WORKER_CPU_FACTOR,
      },
    },
    { metric: 'CPU per floor run (activities direct), all processes', value: cpuFloor, unit: 'ms' },
    ...perProcess('CPU per floor run', floorDirect, 'bench process (the floor loop)'),
    { metric: 'CPU per onboarding, sequential, all processes', value: totalCpu(sequential), unit: 'ms' },
    ...(['local', 'regular'] as const).flatMap((kind): Metric[] => [
      { metric: `bare 3 ${kind} activities sequential p50`, value: bare[kind].sequential.p50, unit: 'ms' },
      { metric: `bare 3 ${kind} activities throughput`, value: bare[kind].concurrent.perSecond, unit: '/s' },
      {
        metric: `bare 3 ${kind} activities p50 at ${concurrency} in flight`,
        value: bare[kind].concurrent.latency.p50,
        unit: 'ms',
      },
      {
        metric: `bare 3 ${kind} activities CPU per run, all processes`,
        value: totalCpu(bare[kind].concurrent),
        unit: 'ms',
      },
      { metric: `bare 3 ${kind} activities worker RSS peak`, value: bare[kind].rss.peakMb, unit: 'MB' },
    ]),
    // Only when the whole stack's CPU is measured: a server or database elsewhere is missing from the total.
    ...(infra.sources.temporal === 'TEMPORAL_ADDRESS' || infra.sources.postgres !== 'embedded'
      ? []
      : throughputCeilingMetrics({
          cores: availableParallelism(),
          target: throughputTarget,
          onboarding: { perSecond: concurrent.perSecond, cpuMsPerRun: cpuTotal },
          floorRunCpuMs: cpuFloor,
        })),
    {
      metric: `tenantctl --help, median of ${cli.runs} [${cli.code}]`,
      value: cli.help.p50,
      unit: 'ms',
      target: { description: `<= ${CLI_HELP_TARGET_MS} ms`, met: cli.help.p50 <= CLI_HELP_TARGET_MS },
    },
    {
      metric: `tenantctl status R, median of ${cli.runs} [${cli.code}]`,
      value: cli.status.p50,
      unit: 'ms',
      target: { description: `<= ${CLI_STATUS_TARGET_MS} ms`, met: cli.status.p50 <= CLI_STATUS_TARGET_MS },
    },
    { metric: 'tenantctl --help, CPU per run (user + system)', value: cli.help.cpuMsPerRun, unit: 'ms' },
    { metric: 'tenantctl status R, CPU per run (user + system)', value: cli.status.cpuMsPerRun, unit: 'ms' },
  ];
  return {
    metrics: [...metrics, ...(onCluster?.metrics ?? [])],
    violations: [...violations, ...(onCluster?.violations ?? [])],
    details: {
      ...(onCluster ? { workerProcesses: onCluster.details } : {}),
      infra: context.infra.sources,
      layout:
        'sequential phases: worker and client in the bench process (one shared ' +
        'NativeConnection, eager start); throughput phases: the worker in its own process ' +
        '(bench/onboarding/worker-child.ts), the client in the bench process; simulator ' +
        'in a child process; Temporal dev server and Postgres as their own processes',
      latencyMs: options.latencyMs,
      fundingMicroUsd: FUNDING_MICRO_USD,
      workerTuning: world.tuning,
      workerProcessNodeFlags: workerProcess.nodeFlags,
      workerHeapGrowingPercent: workerProcess.heapGrowingPercent,
      workerProcessCode: workerProcess.code,
      floor: { callsOnly: floorCalls, activitiesDirect: floorDirect },
      onboardTenant: { sequential, concurrent, callsPerOnboarding, callsByRoute, histories, starts, byStatement },
      activityTimings: timings,
      bare: { ...bare, histories: bareHistories },
      rss: { workerProcessAtConcurrency: workerRss },
      cli,
    },
  };
}

/** One row per process of a phase: the bench process itself, then each labelled child group. */
function perProcess(prefix: string, measured: CpuMeasured<object>, benchProcess: string): Metric[] {
  return [
    { metric: `${prefix}: ${benchProcess}`, value: measured.cpuMsPerRun, unit: 'ms' },
    ...Object.entries(measured.otherProcessesCpuMsPerRun)
      .sort(([, a], [, b]) => b - a)
      .map(([name, ms]): Metric => ({ metric: `${prefix}: ${name}`, value: ms, unit: 'ms' })),
  ];
}

/** pg_stat_statements over the throughput phase, one line per statement: calls, exec and plan ms per onboarding. */
function statementTable(stats: StatementStat[]): string {
  const head = 'calls  exec ms  plan ms  rows/call  statement';
  const lines = stats.map(
    (s) =>
      `${s.callsPerRun.toFixed(2).padStart(5)}  ${s.execMsPerRun.toFixed(3).padStart(7)}  ` +
      `${s.planMsPerRun.toFixed(3).padStart(7)}  ${s.rowsPerCall.toFixed(2).padStart(9)}  ${s.statement}`,
  );
  return [head, ...lines].join('\n');
}

function ratio(a: number, b: number): number {
  return Math.round((a / b) * 100) / 100;
}

function totalCpu(measured: CpuMeasured<object>): number {
  const others = Object.values(measured.otherProcessesCpuMsPerRun).reduce((sum, ms) => sum + ms, 0);
  return Math.round((measured.cpuMsPerRun + others) * 10) / 10;
}

function percentOf(part: number, whole: number): number {
  return Math.round((part / Math.max(1, whole)) * 1000) / 10;
}

export type { OnboardingWorld };
