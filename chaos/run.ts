import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { seededRandom } from '../src/sim/faults.js';
import { createEncryptionCodec } from '../src/secrets/payload-codec.js';
import { parseMasterKeys } from '../src/secrets/master-keys.js';
import { checkChaosApplied, checkNotices, checkOperations, checkWorkerExits, checkWorkerLog } from './check/process.js';
import { checkRecords, checkTokensInRecords } from './check/records.js';
import { checkTemporal } from './check/temporal.js';
import type { InvariantResult } from './check/invariant.js';
import { Cleanup, sleep } from '../src/infra/cleanup.js';
import { chaosEvents, conduct, type ConductorReport } from './conductor.js';
import { Driver, type Operation } from './driver.js';
import { clearFaults, faultRules, setFaults, Storm } from './faults.js';
import type { ChaosOptions } from './options.js';
import { makePlan } from './plan.js';
import { WorkerProcess } from './worker-process.js';
import { startWorld } from './world.js';
import type { Pool } from '../src/db/pool.js';

export interface ChaosReport {
  runId: string;
  options: Omit<ChaosOptions, 'log'>;
  results: InvariantResult[];
  passed: boolean;
  durationMs: { load: number; check: number; total: number };
  operations: Record<string, number>;
  runs: Record<string, number>;
  chaos: ConductorReport & {
    workerStarts: number;
    workerStartFailures: number;
    workerKills: number;
    workerPauses: number;
    platformRequests: number;
    faultsInjected: number;
    peakRequestsPerSecond: number;
    overlaps: Record<string, number>;
  };
  /** Worker processes (`pid@host`) that completed workflow tasks of the run. */
  workerIdentities: string[];
  /** Reasons of every run that is not completed, by `workflowId/runId`. */
  openRuns: Record<string, string>;
  /** Holds the worker's log; kept only when the run failed. */
  runDir: string;
}

/** One chaos run, from nothing to the invariant table; everything it started is stopped before it returns. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log;
  const started = Date.now();
  const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const cleanup = new Cleanup(log);
  try {
    const world = await startWorld(options, runId, cleanup);
    const plan = makePlan(options, runId);
    log(
      `run ${runId}: ${plan.tenants.length} tenants, ${plan.totalOperations} operations ` +
        `planned; work in ${world.runDir}`,
    );
    const workers = Array.from(
      { length: options.workers },
      (_, i) =>
        new WorkerProcess(
          world.workerEnv,
          join(world.runDir, options.workers > 1 ? `worker-${i + 1}.log` : 'worker.log'),
          log,
        ),
    );
    for (const worker of workers) cleanup.defer('worker', () => worker.stop());
    await Promise.all(workers.map((worker) => worker.start()));
    await setFaults(world.sim.url, faultRules(options, Storm.none));

    // Load: the driver plays the plan while the conductor breaks things; both stop at the deadline.
    const loadStarted = Date.now();
    const driver = new Driver(world.client, world.taskQueue, plan, options.startRate, options.workflowTaskTimeout);
    let loading = true;
    const deadline = setTimeout(
      () => (log('deadline reached: no more waiting for operations'), driver.stop()),
      options.timeoutMs,
    );
    const progressTimer = setInterval(
      () =>
        log(
          `progress: ${driver.completed}/${plan.totalOperations} operations finished, ` +
            `${driver.started - driver.completed} in flight, workers ` +
            `${workers.map((w) => (w.running ? 'up' : 'DOWN')).join('/')}`,
        ),
      15_000,
    );
    const events = chaosEvents(options, {
      simUrl: world.sim.url,
      workers,
      postgres: world.postgres,
      temporal: world.temporal,
      random: seededRandom(options.seed + 1),
    });
    // Starts and completions both count, so events spread over the run even when completions come in bursts.
    const progress = () => (driver.started + driver.completed) / (2 * plan.totalOperations);
    const conductor = conduct(events, progress, () => !loading, log);
    await driver.run();
    loading = false;
    clearTimeout(deadline);
    clearInterval(progressTimer);
    const conducted = await conductor;
    const loadMs = Date.now() - loadStarted;
    log(`load done in ${(loadMs / 1000).toFixed(0)} s; faults off, checking`);

    // Check: faults off and the workers up, so queries of still-running runs can be answered.
    const checkStarted = Date.now();
    await clearFaults(world.sim.url);
    await Promise.all(workers.map((worker) => worker.start()));
    await sleep(2000); // visibility catches up with the last closes
    const temporal = await checkTemporal(
      world.client,
      createEncryptionCodec(parseMasterKeys(world.secretsKeys)),
      world.taskQueue,
    );
    const records = await checkRecords(world.pool, world.sim.state(), `chaos-${runId}-`, driver.operations);
    const tokensInRecords = await checkTokensInRecords(world.pool);
    for (const worker of workers) await worker.stop(); // flushes the log before it is read
    const overlaps = await countOverlaps(
      world.pool,
      workers.map((worker) => worker.logFile),
    );
    const results = [
      ...records,
      checkOperations(driver.operations, temporal.reasons),
      ...temporal.results,
      checkWorkerLog(workers.map((worker) => worker.logFile)),
      tokensInRecords,
      checkNotices(world.notices),
      checkWorkerExits(
        sum(workers, (w) => w.starts),
        workers.flatMap((w) => w.unexpectedExits),
      ),
      checkChaosApplied(conducted),
    ];
    const stats = world.sim.state().stats;
    const { log: _log, ...reportOptions } = options;
    const passed = results.every((r) => r.violations.length === 0);
    // The worker's log is evidence only when something broke: kept then, removed otherwise.
    if (passed) cleanup.defer('run directory', async () => rmSync(world.runDir, { recursive: true, force: true }));
    return {
      runId,
      options: reportOptions,
      results,
      passed,
      durationMs: { load: loadMs, check: Date.now() - checkStarted, total: Date.now() - started },
      operations: countBy(driver.operations, (o: Operation) => `${o.kind} ${o.outcome}`),
      runs: countBy(temporal.runs, (r) => `${r.type} ${r.status.name}`),
      chaos: {
        ...conducted,
        workerStarts: sum(workers, (w) => w.starts),
        workerStartFailures: sum(workers, (w) => w.startFailures),
        workerKills: sum(workers, (w) => w.kills),
        workerPauses: sum(workers, (w) => w.pauses),
        platformRequests: stats.requestsTotal,
        faultsInjected: stats.faultsInjectedTotal + stats.rateLimitedTotal,
        peakRequestsPerSecond: stats.peakRequestsPerSecond,
        overlaps,
      },
      workerIdentities: temporal.workerIdentities,
      openRuns: Object.fromEntries(temporal.reasons),
      runDir: world.runDir,
    };
  } finally {
    await cleanup.runAll();
  }
}

/**
 * Evidence that attempts overlapped (issue 44): local activity attempts that completed after their workflow task
 * was gone (the SDK's "untracked local activity", a frozen or late attempt whose successor was scheduled), and what
 * the fences did (audit actions: a fenced create revoking its own key, the orphan sweep, keys refused at first use).
 */
async function countOverlaps(pool: Pool, logFiles: string[]): Promise<Record<string, number>> {
  let lateLocalActivities = 0;
  for (const file of logFiles) {
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    lateLocalActivities += text.split('Tried to complete untracked local activity').length - 1;
  }
  const { rows } = await pool.query<{ action: string; n: number }>(
    `SELECT action, count(*)::int AS n FROM audit_log
      WHERE action IN ('key.superseded_revoked', 'key.orphan_revoked', 'key.rejected', 'parent_key.superseded_revoked')
      GROUP BY action`,
  );
  return { lateLocalActivities, ...Object.fromEntries(rows.map((r) => [r.action, r.n])) };
}

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

function sum<T>(items: T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}
