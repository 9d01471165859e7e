/**
 * `npm run chaos`: N onboardings with rotations and closes mixed in, under platform faults, worker
 * SIGKILLs and a Postgres restart; then every invariant is checked against Postgres, Temporal and
 * the simulator's books. Prints the table, writes a JSON report, exits 1 on any violation.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { printTable } from './check/invariant.js';
import { CLUSTER_ADDITIONS, DEFAULT_OPTIONS, OVERLAP_ADDITIONS, RESTORE_ADDITIONS } from './options.js';
import { runChaos } from './run.js';

const integer = (name: string, min: number) => (value: string) => {
  if (!/^[0-9]+$/.test(value) || Number(value) < min)
    throw new InvalidArgumentError(`${name} must be a whole number >= ${min}`);
  return Number(value);
};
const share = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`${name} must be between 0 and 1`);
  return n;
};

const program = new Command('chaos')
  .description(
    'Onboardings, rotations and closes under faults, worker kills and a Postgres restart; then the invariants.',
  )
  .option('--tenants <n>', 'onboardings to run', integer('--tenants', 1), DEFAULT_OPTIONS.tenants)
  .option('--seed <n>', 'seed of the plan and of the fault rolls', integer('--seed', 0), DEFAULT_OPTIONS.seed)
  .option('--start-rate <n>', 'onboardings started per second', integer('--start-rate', 1), DEFAULT_OPTIONS.startRate)
  .option(
    '--kills <n>',
    'worker SIGKILLs (each followed by a restart)',
    integer('--kills', 0),
    DEFAULT_OPTIONS.workerKills,
  )
  .option(
    '--drop-probability <p>',
    'drop-after-commit probability on every mutating route',
    share('--drop-probability'),
    DEFAULT_OPTIONS.dropProbability,
  )
  .option(
    '--storm-probability <p>',
    '503 / 429 probability while a storm is on',
    share('--storm-probability'),
    DEFAULT_OPTIONS.stormProbability,
  )
  .option(
    '--storm-seconds <n>',
    'how long each 503 / 429 storm lasts',
    integer('--storm-seconds', 1),
    DEFAULT_OPTIONS.stormSeconds,
  )
  .option('--no-postgres-restart', 'skip the Postgres restart')
  .option(
    '--cluster',
    'on a Temporal cluster (server on Postgres, two worker processes) with a Temporal ' +
      'server restart; builds the server on first use',
  )
  .option(
    '--temporal-restarts <n>',
    'Temporal server restarts (with --cluster)',
    integer('--temporal-restarts', 0),
    CLUSTER_ADDITIONS.temporalRestarts,
  )
  .option(
    '--timeout-minutes <n>',
    'hard limit for the load; what is open then is reported',
    integer('--timeout-minutes', 1),
    DEFAULT_OPTIONS.timeoutMs / 60_000,
  )
  .option(
    '--overlap',
    'make two attempts of one step at once likely: workers paused (SIGSTOP/SIGCONT) while local activities are ' +
      'in flight, and 2 s workflow task timeouts on the onboardings',
  )
  .option(
    '--restore',
    'the restore drill: top-ups and suspends too; the records backed up early, restored late while the worker ' +
      'and Temporal run on, then a drift check before the invariants',
  )
  .option('--json <file>', 'where to write the JSON report (default: a file in the temp directory)')
  .parse();

const opts = program.opts<{
  tenants: number;
  seed: number;
  startRate: number;
  kills: number;
  dropProbability: number;
  stormProbability: number;
  stormSeconds: number;
  postgresRestart: boolean;
  cluster?: boolean;
  overlap?: boolean;
  restore?: boolean;
  temporalRestarts: number;
  timeoutMinutes: number;
  json?: string;
}>();

const say = (line: string) => console.error(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}`);

try {
  const report = await runChaos({
    ...DEFAULT_OPTIONS,
    tenants: opts.tenants,
    seed: opts.seed,
    startRate: opts.startRate,
    workerKills: opts.kills,
    dropProbability: opts.dropProbability,
    stormProbability: opts.stormProbability,
    stormSeconds: opts.stormSeconds,
    restartPostgres: opts.postgresRestart,
    ...(opts.cluster ? { ...CLUSTER_ADDITIONS, temporalRestarts: opts.temporalRestarts } : {}),
    ...(opts.overlap ? OVERLAP_ADDITIONS : {}),
    ...(opts.restore ? RESTORE_ADDITIONS : {}),
    timeoutMs: opts.timeoutMinutes * 60_000,
    temporalAddress: opts.cluster ? undefined : process.env.TEMPORAL_ADDRESS,
    temporalNamespace: process.env.TEMPORAL_NAMESPACE ?? DEFAULT_OPTIONS.temporalNamespace,
    log: say,
  });
  const file = opts.json ?? join(tmpdir(), `tenant-orch-chaos-${report.runId}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const c = report.chaos;
  console.log('');
  console.log(
    `chaos run ${report.runId}: ${opts.tenants} tenants in ` +
      `${(report.durationMs.total / 1000).toFixed(0)} s (load ` +
      `${(report.durationMs.load / 1000).toFixed(0)} s, checks ` +
      `${(report.durationMs.check / 1000).toFixed(0)} s)`,
  );
  console.log(
    `operations: ${Object.entries(report.operations)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  console.log(
    `chaos: ${c.workerKills} worker kills, ${c.workerPauses} pauses (${c.workerStarts} starts, ` +
      `${c.workerStartFailures} refused while Postgres was down), ` +
      `${c.fired.filter((e) => e.name === 'Postgres restart').length} Postgres ` +
      `restart(s), ${c.fired.filter((e) => e.name.startsWith('Temporal server restart')).length} ` +
      `Temporal server restart(s), ` +
      `${c.fired.filter((e) => e.name.includes('connections')).length} connection ` +
      `drops, ${c.fired.filter((e) => e.name.includes('storm')).length} storms, ` +
      `${c.faultsInjected} faults injected in ${c.platformRequests} platform requests`,
  );
  console.log(
    `overlaps: ${Object.entries(c.overlaps)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  for (const line of report.restore
    ? [
        `restore: the backup held ${Object.values(report.restore.backedUp).reduce((a, b) => a + b, 0)} rows; ` +
          `the restore undid ${Object.values(report.restore.undid).reduce((a, b) => a + b, 0)}`,
        ...report.restore.recovery.map((l) => `recovery: ${l}`),
      ]
    : [])
    console.log(line);
  console.log('');
  printTable(report.results, (line) => console.log(line));
  console.log('');
  console.log(
    report.passed ? `PASSED: report in ${file}` : `FAILED: report in ${file}, worker log in ${report.runDir}`,
  );
  process.exitCode = report.passed ? 0 : 1;
} catch (error) {
  say(`the run itself failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 2;
}
// Whatever a library left open (a socket, a timer) must not keep a finished run alive.
setTimeout(() => process.exit(), 5_000).unref();
