/**
 * onboarding — issue 4's benchmark: onboardTenant against the floor (the same platform calls and
 * records made by a plain loop) and against a bare three-activity workflow, all in one run on the
 * same infrastructure, with the simulator adding a fixed latency to every platform call.
 *
 *   floor (calls only, activities direct) ─► onboardTenant sequential ─► onboardTenant concurrent
 *   ─► bare three local activities ─► bare three regular activities ─► exactly-once checks
 */
import { performance } from 'node:perf_hooks';
import { sampleRss, type ConcurrentRun, type CpuMeasured, type LatencySummary, toMb, runConcurrent, runSequential, withCpu } from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult, Metric } from './lib/types.js';
import type { WorkerTuning } from './lib/worker.js';
import { profileHistories, verifyOnboardings } from './onboarding/checks.js';
import { bareRunner, newStartCounter, onboardingRunner, type BareKind } from './onboarding/drivers.js';
import { floorRunners } from './onboarding/floor.js';
import { runClusterPhases } from './onboarding/cluster.js';
import { createOnboardingWorld, type OnboardingWorld } from './onboarding/world.js';
import { onboardingWorkflowId } from '../src/domain/ids.js';

const FUNDING_MICRO_USD = '1000000';
const RSS_TARGET_MB = 400;
const FLOOR_FACTOR = 1.5;

export const onboardingBenchmark: Benchmark = {
  name: 'onboarding',
  description: 'onboardTenant vs the floor and a bare three-activity workflow',
  options: [
    { flags: '--latency-ms <n>', description: 'simulated latency added to every platform call', defaultValue: 25 },
    { flags: '--sequential <n>', description: 'timed runs one after another (p50/p99)', defaultValue: 30 },
    { flags: '--warmup <n>', description: 'untimed runs before each sequential series', defaultValue: 5 },
    { flags: '--count <n>', description: 'workflows in each throughput run', defaultValue: 1000 },
    { flags: '--concurrency <n>', description: 'workflows in flight at once in each throughput run', defaultValue: 1000 },
    { flags: '--max-cached-workflows <n>', description: 'worker sticky cache size (0: SDK default)', defaultValue: 2000 },
    { flags: '--wft-slots <n>', description: 'maxConcurrentWorkflowTaskExecutions (0: SDK default)', defaultValue: 0 },
    { flags: '--la-slots <n>', description: 'maxConcurrentLocalActivityExecutions (0: SDK default)', defaultValue: 0 },
    { flags: '--wft-pollers <n>', description: 'maxConcurrentWorkflowTaskPolls (0: SDK default)', defaultValue: 0 },
    { flags: '--cluster-count <n>', description: 'with --cluster: onboardings in each worker-process phase', defaultValue: 300 },
    { flags: '--cluster-concurrency <n>', description: 'with --cluster: onboardings in flight in each worker-process phase', defaultValue: 100 },
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
  const { options, log } = context;
  const n = options.sequential!;
  const warmup = options.warmup!;
  const count = options.count!;
  const concurrency = options.concurrency!;
  const tag = Date.now().toString(36);
  const rssBeforeWorkerMb = toMb(process.memoryUsage.rss());
  const world = await createOnboardingWorld(context, tuningOf(options));
  const wholeRunRss = sampleRss();

  log(`floor: ${n} sequential, calls only, then activities called directly`);
  const floor = floorRunners(world, FUNDING_MICRO_USD);
  const floorCalls = await withCpu(n + warmup, () => runSequential(n, warmup, (i) => floor.callsOnly(`floor-${tag}-calls-${i}`)));
  const statementsBeforeFloor = world.postgresStatements();
  const floorDirect = await withCpu(n + warmup, () => runSequential(n, warmup, (i) => floor.activitiesDirect(`floor-${tag}-acts-${i}`)));

  const floorStatements = (world.postgresStatements() - statementsBeforeFloor) / (n + warmup);
  const timings: Record<string, unknown> = { floorActivitiesDirectMeanMs: floor.meanStepMs() };
  log(`onboardTenant: ${n} sequential`);
  const starts = { sequential: newStartCounter(), concurrent: newStartCounter(), bareLocal: newStartCounter(), bareRegular: newStartCounter() };
  const onboardSequential = onboardingRunner(world, FUNDING_MICRO_USD, starts.sequential);
  const seqRefs = Array.from({ length: warmup + n }, (_, i) => `bench-${tag}-seq-${i}`);
  const sequential = await withCpu(n + warmup, () => runSequential(n, warmup, (i) => onboardSequential(seqRefs[i]!)));

  timings.onboardTenantSequential = world.activityTimings.take();
  log(`onboardTenant: ${count} with ${concurrency} in flight`);
  const concRefs = Array.from({ length: count }, (_, i) => `bench-${tag}-c-${i}`);
  const statsBefore = await world.sim.stats();
  const statementsBefore = world.postgresStatements();
  const concurrentRss = sampleRss();
  const onboardConcurrent = onboardingRunner(world, FUNDING_MICRO_USD, starts.concurrent);
  const concurrent = await withCpu(count, () => runConcurrent(count, concurrency, (i) => onboardConcurrent(concRefs[i]!)));
  const workerRss = concurrentRss.stop();
  timings.onboardTenantConcurrent = world.activityTimings.take();
  const statsAfter = await world.sim.stats();
  const statementsPerOnboarding = (world.postgresStatements() - statementsBefore) / count;
  const callsPerOnboarding = (statsAfter.requestsTotal - statsBefore.requestsTotal) / count;
  const callsByRoute = Object.fromEntries(
    Object.entries(statsAfter.byRoute).map(([route, total]) => [route, (total - (statsBefore.byRoute[route] ?? 0)) / count]),
  );

  const histories = await profileHistories(world.client, [seqRefs[warmup], seqRefs.at(-1), concRefs[0], concRefs.at(-1)].map((ref) => onboardingWorkflowId(String(ref))));
  const eventsPerWorkflow = histories.reduce((sum, h) => sum + h.events, 0) / histories.length;

  const bare = {} as Record<BareKind, { sequential: CpuMeasured<LatencySummary>; concurrent: CpuMeasured<ConcurrentRun> }>;
  for (const kind of ['local', 'regular'] as const) {
    log(`bare three ${kind} activities: ${n} sequential, then ${count} with ${concurrency} in flight`);
    const runBare = bareRunner(world, kind, options.latencyMs!, kind === 'local' ? starts.bareLocal : starts.bareRegular);
    bare[kind] = {
      sequential: await withCpu(n + warmup, () => runSequential(n, warmup, (i) => runBare(`bare-${kind}-${tag}-seq-${i}`))),
      concurrent: await withCpu(count, () => runConcurrent(count, concurrency, (i) => runBare(`bare-${kind}-${tag}-c-${i}`))),
    };
  }
  timings.bare = world.activityTimings.take();
  const bareHistories = await profileHistories(world.client, [`bare-local-${tag}-c-0`, `bare-regular-${tag}-c-0`]);

  log('checking exactly-once effects in the simulator and Postgres');
  const checkStarted = performance.now();
  const violations = await verifyOnboardings(world, [...seqRefs, ...concRefs], FUNDING_MICRO_USD);
  log(`checked ${seqRefs.length + concRefs.length} onboardings in ${Math.round(performance.now() - checkStarted)} ms: ${violations.length} violations`);
  const runRss = wholeRunRss.stop();
  const onCluster = options.cluster ? await runClusterPhases(context) : undefined;

  const floorP50 = floorDirect.p50;
  const metrics: Metric[] = [
    { metric: 'floor: calls only p50', value: floorCalls.p50, unit: 'ms' },
    { metric: 'floor: calls only p99', value: floorCalls.p99, unit: 'ms' },
    { metric: 'floor: activities direct p50', value: floorDirect.p50, unit: 'ms' },
    { metric: 'floor: activities direct p99', value: floorDirect.p99, unit: 'ms' },
    {
      metric: `onboardTenant sequential p50 (n=${n})`,
      value: sequential.p50,
      unit: 'ms',
      target: { description: `<= ${FLOOR_FACTOR} x floor (${(FLOOR_FACTOR * floorP50).toFixed(1)} ms)`, met: sequential.p50 <= FLOOR_FACTOR * floorP50 },
    },
    { metric: `onboardTenant sequential p99 (n=${n})`, value: sequential.p99, unit: 'ms' },
    { metric: 'onboardTenant / floor (p50)', value: Math.round((sequential.p50 / floorP50) * 100) / 100, unit: 'x' },
    {
      metric: `onboardTenant throughput (${count}, ${concurrency} in flight)`,
      value: concurrent.perSecond,
      unit: '/s',
      target: { description: `>= bare regular (${bare.regular.concurrent.perSecond}/s)`, met: concurrent.perSecond >= bare.regular.concurrent.perSecond },
    },
    { metric: `onboardTenant p50 at ${concurrency} in flight`, value: concurrent.latency.p50, unit: 'ms' },
    { metric: `onboardTenant p99 at ${concurrency} in flight`, value: concurrent.latency.p99, unit: 'ms' },
    { metric: 'platform calls per onboarding', value: Math.round(callsPerOnboarding * 100) / 100, unit: '', target: { description: '= 4 (the floor)', met: callsPerOnboarding === 4 } },
    { metric: 'Postgres statements per onboarding', value: Math.round(statementsPerOnboarding * 10) / 10, unit: '' },
    { metric: 'Postgres statements per floor run', value: Math.round(floorStatements * 10) / 10, unit: '' },
    { metric: 'history events per workflow', value: eventsPerWorkflow, unit: '' },
    { metric: 'workflow tasks per workflow', value: histories.reduce((s, h) => s + h.workflowTasks, 0) / histories.length, unit: '' },
    {
      metric: 'worker RSS peak (bench process)',
      value: workerRss.peakMb,
      unit: 'MB',
      target: { description: `< ${RSS_TARGET_MB} MB`, met: workerRss.peakMb < RSS_TARGET_MB },
    },
    { metric: 'eager starts, sequential', value: percentOf(starts.sequential.eager, starts.sequential.started), unit: '%' },
    { metric: `eager starts, ${concurrency} in flight`, value: percentOf(starts.concurrent.eager, starts.concurrent.started), unit: '%' },
    { metric: 'worker CPU per onboarding, sequential', value: sequential.cpuMsPerRun, unit: 'ms' },
    { metric: `worker CPU per onboarding, ${concurrency} in flight`, value: concurrent.cpuMsPerRun, unit: 'ms' },
    { metric: `CPU per onboarding, all processes, ${concurrency} in flight`, value: totalCpu(concurrent), unit: 'ms' },
    { metric: 'CPU per floor run (activities direct), all processes', value: totalCpu(floorDirect), unit: 'ms' },
    ...(['local', 'regular'] as const).flatMap((kind): Metric[] => [
      { metric: `bare 3 ${kind} activities sequential p50`, value: bare[kind].sequential.p50, unit: 'ms' },
      { metric: `bare 3 ${kind} activities sequential p99`, value: bare[kind].sequential.p99, unit: 'ms' },
      { metric: `bare 3 ${kind} activities throughput`, value: bare[kind].concurrent.perSecond, unit: '/s' },
      { metric: `bare 3 ${kind} activities p50 at ${concurrency} in flight`, value: bare[kind].concurrent.latency.p50, unit: 'ms' },
      { metric: `bare 3 ${kind} activities CPU per run, all processes`, value: totalCpu(bare[kind].concurrent), unit: 'ms' },
    ]),
  ];
  return {
    metrics: [...metrics, ...(onCluster?.metrics ?? [])],
    violations: [...violations, ...(onCluster?.violations ?? [])],
    details: {
      ...(onCluster ? { workerProcesses: onCluster.details } : {}),
      infra: context.infra.sources,
      layout: 'worker and client in the bench process (one shared NativeConnection, eager start); simulator in a child process; Temporal dev server and Postgres as their own processes',
      latencyMs: options.latencyMs,
      fundingMicroUsd: FUNDING_MICRO_USD,
      workerTuning: world.tuning,
      floor: { callsOnly: floorCalls, activitiesDirect: floorDirect },
      onboardTenant: { sequential, concurrent, callsPerOnboarding, callsByRoute, histories, starts },
      activityTimings: timings,
      bare: { ...bare, histories: bareHistories },
      rss: { beforeWorkerMb: rssBeforeWorkerMb, concurrentPhase: workerRss, wholeRun: runRss },
    },
  };
}

function totalCpu(measured: CpuMeasured<object>): number {
  const others = Object.values(measured.otherProcessesCpuMsPerRun).reduce((sum, ms) => sum + ms, 0);
  return Math.round((measured.cpuMsPerRun + others) * 10) / 10;
}

function percentOf(part: number, whole: number): number {
  return Math.round((part / Math.max(1, whole)) * 1000) / 10;
}

export type { OnboardingWorld };
