import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { distEntry, distState } from '../../bin/dist-fresh.js';
import { loadConfig } from '../../src/config/index.js';
import { startGateway } from '../../src/main/gateway.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { summarize, type LatencySummary } from '../lib/stats.js';
import type { BenchContext } from '../lib/types.js';
import type { OnboardingWorld } from './world.js';

/**
 * `tenantctl` as an operator runs it, timed from spawn to exit against the bench's running stack
 * (its Temporal server and database): `--help`, and `status <ref>` of a finished onboarding. Which
 * code ran is reported too: the CLI bundle or the compiled dist/ when fresh, else the sources through tsx.
 * `status` is a gateway client (as every operator command is): it asks a gateway over the same stack, started
 * in the bench process for these timings alone (startCliGateway), as a viewer.
 */
const TENANTCTL = fileURLToPath(new URL('../../bin/tenantctl.js', import.meta.url));

/** Where each timed run's own CPU comes from: a probe loaded into it (see exit-rusage.js). */
const EXIT_RUSAGE = new URL('../lib/exit-rusage.js', import.meta.url).href;

/** One command's runs: wall time from spawn to exit, and CPU (user + system) per run. */
export type CommandTimings = LatencySummary & {
  /** The process's own CPU per run (getrusage at its exit, microsecond resolution), ms. */
  cpu: LatencySummary;
  /** The whole process tree's CPU per run (the kernel's count of waited-for children, 10 ms ticks), mean, ms. */
  cpuMsPerRun: number;
};

export interface CliTimings {
  runs: number;
  code: string;
  help: CommandTimings;
  status: CommandTimings;
}

/** CPU (user + system, ms) of this process's waited-for children so far: /proc/self/stat cutime + cstime. */
function childrenCpuMs(): number {
  try {
    const text = readFileSync('/proc/self/stat', 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

export interface CliGateway {
  url: string;
  token: string;
  close(): Promise<void>;
}

/** The production gateway (src/main/gateway.ts) over the bench's database and Temporal, on a free loopback port. */
export async function startCliGateway(world: OnboardingWorld, context: BenchContext): Promise<CliGateway> {
  const viewer = generateOperator('bench', 'viewer');
  const gateway = await startGateway(
    loadConfig({
      DATABASE_URL: world.wiring.databaseUrl,
      TEMPORAL_ADDRESS: context.infra.temporalAddress,
      TEMPORAL_NAMESPACE: context.infra.namespace,
      TEMPORAL_TASK_QUEUE: world.taskQueue,
      SECRETS_KEYS: world.wiring.masterKeys,
      OPERATORS: viewer.entry,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: '0',
      LOG_LEVEL: 'silent',
    }),
  );
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= gateway.close());
  context.infra.cleanup.defer('CLI timings gateway', close);
  return { url: gateway.url, token: viewer.token, close };
}

/**
 * One run of tenantctl, awaited (not spawnSync: the gateway answering it runs in this process's event loop), with
 * the probe reporting its CPU on file descriptor 3.
 */
function runTenantctl(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stderr: string; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        // Node flags for every timed run (`BENCH_CLI_FLAGS='--cpu-prof --cpu-prof-dir=DIR'`), as for the worker.
        ...(process.env.BENCH_CLI_FLAGS ? process.env.BENCH_CLI_FLAGS.split(' ') : []),
        '--import',
        EXIT_RUSAGE,
        TENANTCTL,
        ...args,
      ],
      { env, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let usage = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    (child.stdio[3] as Readable).setEncoding('utf8').on('data', (chunk: string) => (usage += chunk));
    child.once('error', reject);
    child.once('close', (status) => {
      const cpu = usage ? (JSON.parse(usage) as { userCPUTime: number; systemCPUTime: number }) : undefined;
      resolve({ status, stderr, cpuMs: cpu ? (cpu.userCPUTime + cpu.systemCPUTime) / 1000 : Number.NaN });
    });
  });
}

export async function timeCli(
  env: { databaseUrl: string; temporalAddress: string; namespace: string },
  externalRef: string,
  gateway: Pick<CliGateway, 'url' | 'token'>,
  runs = 10,
): Promise<CliTimings> {
  const childEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    DATA_DIR: '/nonexistent-stack-dir',
    DATABASE_URL: env.databaseUrl,
    TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_NAMESPACE: env.namespace,
    TENANTCTL_GATEWAY_URL: gateway.url,
    TENANTCTL_OPERATOR_TOKEN: gateway.token,
  };
  // The two commands take turns, so that a change in the machine's load weighs on both alike.
  const commands = { help: ['--help'], status: ['status', externalRef] };
  const sampled = () => ({ wall: [] as number[], cpu: [] as number[], tree: 0 });
  const samples = { help: sampled(), status: sampled() };
  for (let i = 0; i < runs; i++)
    for (const name of ['help', 'status'] as const) {
      const args = commands[name];
      const treeBefore = childrenCpuMs();
      const started = performance.now();
      const result = await runTenantctl(args, childEnv);
      samples[name].wall.push(performance.now() - started);
      samples[name].cpu.push(result.cpuMs);
      samples[name].tree += childrenCpuMs() - treeBefore;
      if (result.status !== 0) throw new Error(`tenantctl ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    }
  // Wall time waits on the machine and the stack; CPU is what the command itself costs.
  const timings = (name: 'help' | 'status'): CommandTimings => ({
    ...summarize(samples[name].wall),
    cpu: summarize(samples[name].cpu),
    cpuMsPerRun: Math.round(samples[name].tree / runs),
  });
  const state = distState();
  return {
    runs,
    code:
      state !== 'fresh'
        ? `sources via tsx (dist ${state})`
        : distEntry(['status']).pathname.endsWith('/dist/cli/main.js')
          ? 'dist, CLI bundle'
          : 'dist (compiled)',
    help: timings('help'),
    status: timings('status'),
  };
}
