/**
 * cli — issue 49's benchmark: what `tenantctl status <ref>` costs against `tenantctl --help`, the CLI's floor (Node
 * starting, the launcher, commander and the command definitions). Both run as an operator runs them
 * (`node bin/tenantctl.js`, what `npx tenantctl` executes), one after another, against a gateway over the bench's
 * stack; `status` asks for a tenant onboarded first. Target: status within 1.5 × help in wall time and in CPU.
 *
 *   onboard one tenant (in-process worker) ─► gateway over the same stack ─► N × `--help`, N × `status <ref>`
 *
 * CPU per run is the process's own (getrusage at its exit, read by a probe loaded with `--import`: see
 * bench/lib/exit-rusage.js); the whole process tree's, from the kernel's count of waited-for children, is printed
 * beside it as a cross-check (10 ms ticks, so a mean).
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { summarize } from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';
import { startCliGateway, timeCli, type CommandTimings } from './onboarding/cli-timings.js';
import { newStartCounter, onboardingRunner } from './onboarding/drivers.js';
import { createOnboardingWorld } from './onboarding/world.js';

const RATIO_TARGET = 1.5;

export const cliBenchmark: Benchmark = {
  name: 'cli',
  description: 'tenantctl status against tenantctl --help, wall time and CPU',
  options: [{ flags: '--cli-runs <n>', description: 'cli: runs of each command', defaultValue: 20 }],
  run,
};

const round = (n: number) => Math.round(n * 100) / 100;

async function run(context: BenchContext): Promise<BenchResult> {
  const { options, log, infra } = context;
  const runs = options.cliRuns!;
  const loadAtStart = loadavg();
  const world = await createOnboardingWorld(context, {});
  const ref = `cli-bench-${Date.now().toString(36)}`;
  log(`onboarding ${ref}`);
  await onboardingRunner(world, '1000000', newStartCounter(), { taskQueue: world.taskQueue, eager: true })(ref);

  log(`timing tenantctl --help and tenantctl status ${ref}, ${runs} runs each`);
  const gateway = await startCliGateway(world, context);
  const cli = await timeCli(
    { databaseUrl: world.wiring.databaseUrl, temporalAddress: infra.temporalAddress, namespace: infra.namespace },
    ref,
    gateway,
    runs,
  );
  // What of status's wall time is the gateway's: the same request from this process, where nothing starts.
  const answerMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const response = await fetch(`${gateway.url}/v1/tenants/${encodeURIComponent(ref)}`, {
      headers: { authorization: `Bearer ${gateway.token}` },
    });
    await response.text();
    answerMs.push(performance.now() - started);
    if (!response.ok) throw new Error(`GET /v1/tenants/${ref}: ${response.status}`);
  }
  const answer = summarize(answerMs);
  await gateway.close();
  log(
    `load average ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} at the start, ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at the end`,
  );

  const wallRatio = round(cli.status.p50 / cli.help.p50);
  const cpuRatio = round(cli.status.cpu.p50 / cli.help.cpu.p50);
  const rows = (label: string, t: CommandTimings) => [
    { metric: `${label} wall p50 (n=${runs}) [${cli.code}]`, value: t.p50, unit: 'ms' },
    { metric: `${label} CPU p50 (user + system, its process)`, value: t.cpu.p50, unit: 'ms' },
    { metric: `${label} CPU mean (user + system, process tree)`, value: t.cpuMsPerRun, unit: 'ms' },
  ];
  return {
    metrics: [
      ...rows('tenantctl --help', cli.help),
      ...rows('tenantctl status R', cli.status),
      { metric: `the gateway's answer to status R (GET from the bench) p50`, value: answer.p50, unit: 'ms' },
      {
        metric: 'status ÷ --help, wall p50',
        value: wallRatio,
        unit: '×',
        target: { description: `<= ${RATIO_TARGET} ×`, met: wallRatio <= RATIO_TARGET },
      },
      {
        metric: 'status ÷ --help, CPU p50',
        value: cpuRatio,
        unit: '×',
        target: { description: `<= ${RATIO_TARGET} ×`, met: cpuRatio <= RATIO_TARGET },
      },
    ],
    violations: [],
    details: { ...cli, gatewayAnswer: answer, loadAverage: { start: loadAtStart, end: loadavg() } },
  };
}
