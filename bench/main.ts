/**
 * `npm run bench [-- <benchmark>...] [--flags]`: starts the shared infrastructure once, runs the
 * named benchmarks (all registered ones by default), prints one table and writes the JSON results
 * to bench/results/<timestamp>.json. A missed target is a measurement, not an error: the exit code
 * is non-zero only for errors and correctness violations.
 */
import os from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import { Cleanup } from '../src/infra/cleanup.js';
import { startBenchInfra } from './lib/infra.js';
import { renderTable, writeResults } from './lib/report.js';
import { installQuietSdkLogging, sdkLogCounts } from './lib/sdk-log.js';
import type { BenchOptionValues, BenchResult } from './lib/types.js';
import { benchmarks } from './registry.js';

const log = (line: string) => console.error(`[bench] ${line}`);

function positiveInt(flag: string) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${flag} must be a non-negative integer.`);
    return Number(value);
  };
}

const program = new Command()
  .name('bench')
  .description(`Benchmarks: ${benchmarks.map((b) => `${b.name} (${b.description})`).join('; ')}`)
  .argument('[benchmarks...]', `which to run (default: all of ${benchmarks.map((b) => b.name).join(', ')})`);
const seenFlags = new Set<string>();
for (const option of benchmarks.flatMap((b) => b.options)) {
  if (seenFlags.has(option.flags)) continue;
  seenFlags.add(option.flags);
  program.option(option.flags, option.description, positiveInt(option.flags.split(' ')[0]!), option.defaultValue);
}
// Not a number like the others: a switch (the onboarding benchmark's cluster phases).
program.option(
  '--cluster',
  'onboarding: also measure one and two worker processes on a Temporal cluster on ' +
    'Postgres (builds the server on first use); fleet: run on such a cluster instead of the dev server',
);
program.parse();

const names = program.args.length > 0 ? program.args : benchmarks.map((b) => b.name);
const unknown = names.filter((name) => !benchmarks.some((b) => b.name === name));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${benchmarks.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
const { cluster, ...numbers } = program.opts<BenchOptionValues & { cluster?: boolean }>();
const options: BenchOptionValues = { ...numbers, cluster: cluster ? 1 : 0 };
/** A flag not given takes each benchmark's own default (benchmarks sharing a flag may default it differently). */
function optionsOf(benchmark: (typeof benchmarks)[number]): BenchOptionValues {
  const own = { ...options };
  for (const option of benchmark.options) {
    const name = program.options.find((o) => o.flags === option.flags)?.attributeName();
    if (name && program.getOptionValueSource(name) === 'default') own[name] = option.defaultValue;
  }
  return own;
}
const selected = benchmarks.filter((b) => names.includes(b.name));

installQuietSdkLogging(log);

const cleanup = new Cleanup(log);
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping everything`);
    void cleanup.runAll().finally(() => process.exit(130));
  });
}

const startedAt = new Date();
const results: Array<{ name: string; result: BenchResult }> = [];
let failed = false;
try {
  log(`starting Temporal and Postgres (${os.cpus().length} CPUs)`);
  const infra = await startBenchInfra(cleanup, log);
  for (const benchmark of selected) {
    log(`running ${benchmark.name}`);
    const result = await benchmark.run({
      infra,
      options: optionsOf(benchmark),
      log: (line) => log(`${benchmark.name}: ${line}`),
    });
    results.push({ name: benchmark.name, result });
  }
} catch (error) {
  failed = true;
  console.error(interrupted ? 'interrupted' : error);
} finally {
  await cleanup.runAll();
}
if (interrupted) process.exit(130);

if (results.length > 0) {
  console.log(`\n${renderTable(results)}\n`);
  const path = writeResults(
    {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model ?? null,
        totalMemoryMb: Math.round(os.totalmem() / 2 ** 20),
        node: process.version,
        loadAverage: os.loadavg(),
      },
      options,
      temporalSdkWarnings: sdkLogCounts(),
      benchmarks: Object.fromEntries(results.map(({ name, result }) => [name, result])),
    },
    startedAt,
  );
  console.log(`results written to ${path}`);
}
const violations = results.flatMap(({ name, result }) => result.violations.map((v) => `${name}: ${v}`));
if (violations.length > 0) {
  console.error(`\nCORRECTNESS VIOLATIONS (${violations.length}):\n  ${violations.slice(0, 50).join('\n  ')}`);
  failed = true;
}
process.exit(failed ? 1 : 0);
