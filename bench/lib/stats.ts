import { performance } from 'node:perf_hooks';
import { cpuPerRun, descendantsCpuMs } from './process-cpu.js';

/** Latency summaries, the two measuring loops every benchmark uses, and an RSS sampler. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of milliseconds. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    min: round(sorted[0] ?? Number.NaN),
    max: round(sorted.at(-1) ?? Number.NaN),
    mean: round(sorted.reduce((sum, n) => sum + n, 0) / Math.max(1, sorted.length)),
  };
}

/**
 * `count` runs one after another, each timed from call to settled result, after `warmup` untimed
 * runs (JIT, connection pools, sticky caches). Index i numbers runs across warm-up and timed runs.
 */
export async function runSequential(
  count: number,
  warmup: number,
  run: (index: number) => Promise<void>,
): Promise<LatencySummary> {
  for (let i = 0; i < warmup; i++) await run(i);
  const samples: number[] = [];
  for (let i = warmup; i < warmup + count; i++) {
    const started = performance.now();
    await run(i);
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

export interface ConcurrentRun {
  latency: LatencySummary;
  wallMs: number;
  perSecond: number;
}

/** `count` runs with at most `concurrency` in flight; throughput is count over the whole wall time. */
export async function runConcurrent(
  count: number,
  concurrency: number,
  run: (index: number) => Promise<void>,
): Promise<ConcurrentRun> {
  const samples: number[] = [];
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next < count) {
      const index = next++;
      const t0 = performance.now();
      await run(index);
      samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  const wallMs = performance.now() - started;
  return {
    latency: summarize(samples),
    wallMs: Math.round(wallMs),
    perSecond: Math.round((count / wallMs) * 1000 * 10) / 10,
  };
}

/** Samples an RSS (this process's by default) every `everyMs` until stopped; reports the peak in MB. */
export function sampleRss(
  readMb: () => number = () => toMb(process.memoryUsage.rss()),
  everyMs = 100,
): { stop(): { peakMb: number; lastMb: number } } {
  let peak = Number.NaN;
  const take = (mb: number) => {
    if (Number.isFinite(mb)) peak = Number.isFinite(peak) ? Math.max(peak, mb) : mb;
  };
  take(readMb());
  const timer = setInterval(() => {
    take(readMb());
  }, everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      const last = readMb();
      take(last);
      return { peakMb: peak, lastMb: last };
    },
  };
}

export function toMb(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}

/** Runs fn and reports the CPU time (user + system) of this process and of its children meanwhile, per `runs`. */
export type CpuMeasured<T> = T & { cpuMsPerRun: number; otherProcessesCpuMsPerRun: Record<string, number> };

export async function withCpu<T>(runs: number, fn: () => Promise<T>): Promise<CpuMeasured<T>> {
  const before = process.cpuUsage();
  const othersBefore = descendantsCpuMs();
  const result = await fn();
  const used = process.cpuUsage(before);
  return {
    ...result,
    cpuMsPerRun: Math.round(((used.user + used.system) / 1000 / runs) * 10) / 10,
    otherProcessesCpuMsPerRun: cpuPerRun(othersBefore, descendantsCpuMs(), runs),
  };
}
