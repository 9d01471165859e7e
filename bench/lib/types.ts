import type { BenchInfra } from './infra.js';

/**
 * What a benchmark is and what it hands back. A benchmark is one file `bench/<name>.ts` exporting a
 * `Benchmark`, listed once in bench/registry.ts; bench/main.ts starts the shared infrastructure,
 * runs the chosen ones in order and prints one table.
 */
export interface BenchOption {
  /** Commander flag syntax, e.g. `--count <n>`. Benchmarks naming the same flag share its value. */
  flags: string;
  description: string;
  defaultValue: number;
}

export type BenchOptionValues = Record<string, number>;

export interface BenchContext {
  infra: BenchInfra;
  /** Parsed flag values, keyed by commander's camelCase name (`--latency-ms` → `latencyMs`). */
  options: BenchOptionValues;
  log(line: string): void;
}

export interface Target {
  /** Human-readable, e.g. `≤ 1.5 × floor (183.0 ms)`. */
  description: string;
  met: boolean;
}

export interface Metric {
  metric: string;
  value: number;
  unit: string;
  target?: Target;
}

export interface BenchResult {
  metrics: Metric[];
  /** Anything worth keeping in the JSON file beyond the table (breakdowns, tuning, raw stats). */
  details: Record<string, unknown>;
  /** Correctness violations: any makes the run exit non-zero. */
  violations: string[];
}

export interface Benchmark {
  name: string;
  description: string;
  options: BenchOption[];
  run(context: BenchContext): Promise<BenchResult>;
}
