import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Worker,
  type ActivityInterceptorsFactory,
  type NativeConnection,
  type WorkerOptions,
} from '@temporalio/worker';
import type { Cleanup } from '../../src/infra/cleanup.js';

/** The worker tuning knobs a benchmark may set; reported verbatim in the results. */
export type WorkerTuning = Partial<
  Pick<
    WorkerOptions,
    | 'maxCachedWorkflows'
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxConcurrentLocalActivityExecutions'
    | 'maxConcurrentActivityTaskExecutions'
    | 'maxConcurrentWorkflowTaskPolls'
    | 'maxConcurrentActivityTaskPolls'
    | 'nonStickyToStickyPollRatio'
    | 'workflowThreadPoolSize'
  >
>;

const BUNDLE_CHILD = fileURLToPath(new URL('./bundle-child.ts', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
let bundle: Promise<string> | undefined;

/**
 * bench/workflows.ts bundled once per run, in a child process; resolves to the bundle's path.
 * BENCH_WORKFLOWS names another entry (same exports), to measure a changed workflow before adopting it.
 */
export function benchWorkflowBundle(cleanup: Cleanup): Promise<string> {
  bundle ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-bench-bundle-'));
    cleanup.defer('workflow bundle', async () => rmSync(dir, { recursive: true, force: true }));
    const codePath = join(dir, 'workflows.js');
    const entry = process.env.BENCH_WORKFLOWS ? [resolve(process.env.BENCH_WORKFLOWS)] : [];
    const child = spawn(process.execPath, ['--import', 'tsx', BUNDLE_CHILD, codePath, ...entry], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('exit', resolve);
      child.once('error', reject);
    });
    if (code !== 0) throw new Error(`bundling bench/workflows.ts failed (exit code ${code})`);
    return codePath;
  })();
  return bundle;
}

export interface StartedWorker {
  worker: Worker;
  stop(): Promise<void>;
}

export async function startBenchWorker(
  input: {
    connection: NativeConnection;
    namespace: string;
    taskQueue: string;
    activities: object;
    tuning: WorkerTuning;
    /** Diagnostics only (e.g. activity-timings.ts); production adds none. */
    activityInterceptors?: ActivityInterceptorsFactory[];
  },
  cleanup: Cleanup,
): Promise<StartedWorker> {
  const worker = await Worker.create({
    connection: input.connection,
    namespace: input.namespace,
    taskQueue: input.taskQueue,
    activities: input.activities,
    workflowBundle: { codePath: await benchWorkflowBundle(cleanup) },
    ...(input.activityInterceptors ? { interceptors: { activity: input.activityInterceptors } } : {}),
    ...input.tuning,
  });
  const running = worker.run();
  const stop = async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
  };
  cleanup.defer(`worker on ${input.taskQueue}`, stop);
  return { worker, stop };
}
