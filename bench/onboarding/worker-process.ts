import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { workerNodeFlags } from '../../src/infra/worker-node-flags.js';
import { compiledChild } from '../lib/compiled-child.js';
import { labelProcess } from '../lib/process-cpu.js';
import type { BenchContext } from '../lib/types.js';
import { benchWorkflowBundle, type WorkerTuning } from '../lib/worker.js';
import type { WorkerChildOptions } from './worker-child.js';
import type { OnboardingWorld } from './world.js';

/**
 * The throughput phases' worker, in its own process (worker-child.ts), as production runs it apart
 * from its clients: its RSS is read from /proc/<pid>/status and its CPU is its own. Starts cannot
 * be eager (that needs the client on the worker's connection), as in production. Extra Node flags
 * for it (V8 heap, --cpu-prof) come from BENCH_WORKER_NODE_FLAGS.
 */
export interface WorkerProcess {
  pid: number;
  taskQueue: string;
  nodeFlags: string[];
  /** WORKER_HEAP_GROWING_PERCENT as the worker process applied it (0: V8's own heuristics). */
  heapGrowingPercent: number;
  /** Which code the process runs: 'dist (compiled)' or the sources via tsx. */
  code: string;
  /** Postgres statements its pool has sent so far. */
  statements(): Promise<number>;
  /** Resident set size now, MB (Linux; NaN elsewhere). */
  rssMb(): number;
  stop(): Promise<void>;
}

const CHILD = new URL('./worker-child.ts', import.meta.url);
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function startWorkerProcess(
  world: OnboardingWorld,
  context: BenchContext,
  tuning: WorkerTuning,
): Promise<WorkerProcess> {
  const { infra } = context;
  const taskQueue = `bench-onboarding-worker-process-${process.pid}`;
  const options: WorkerChildOptions = {
    temporalAddress: infra.temporalAddress,
    namespace: infra.namespace,
    taskQueue,
    databaseUrl: world.wiring.databaseUrl,
    apiBase: world.sim.apiBase,
    platformKey: world.wiring.platformKey,
    masterKeys: world.wiring.masterKeys,
    bundlePath: await benchWorkflowBundle(infra.cleanup),
    tuning,
  };
  // Launched as production launches a worker (its Node flags), then the bench's own (they win).
  const nodeFlags = [
    ...workerNodeFlags(process.env.BENCH_WORKER_NODE_FLAGS),
    ...(process.env.BENCH_WORKER_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== ''),
  ];
  const entry = compiledChild(CHILD);
  const child = spawn(process.execPath, [...nodeFlags, ...entry.args, JSON.stringify(options)], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  labelProcess(child.pid!, 'worker process');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.send({ type: 'stop' });
    await exited;
  };
  infra.cleanup.defer(`worker process (pid ${child.pid})`, stop);
  const { heapGrowingPercent } = await new Promise<{ heapGrowingPercent: number }>((resolve, reject) => {
    child.once('message', (ready: { heapGrowingPercent: number }) => resolve(ready));
    child.once('exit', (code) => reject(new Error(`the worker process exited before polling (code ${code})`)));
    child.once('error', reject);
  });
  return {
    pid: child.pid!,
    taskQueue,
    nodeFlags,
    heapGrowingPercent,
    code: entry.code,
    statements: () =>
      new Promise<number>((resolve) => {
        const onMessage = (message: { type: string; count?: number }) => {
          if (message.type !== 'statements') return;
          child.off('message', onMessage);
          resolve(message.count ?? 0);
        };
        child.on('message', onMessage);
        child.send({ type: 'statements' });
      }),
    rssMb: () => rssMbOf(child.pid!),
    stop,
  };
}

function rssMbOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
