import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { seededRandom } from '../src/sim/faults.js';
import { createEncryptionCodec } from '../src/secrets/payload-codec.js';
import { parseMasterKeys } from '../src/secrets/master-keys.js';
import { checkChaosApplied, checkNotices, checkOperations, checkWorkerExits, checkWorkerLog } from './check/process.js';
import { checkKeySecrets, checkRecords, checkTokensInRecords } from './check/records.js';
import { backUpRecords, restoreRecords } from './records-backup.js';
import { importClosedTenants } from '../src/client/imports/import-closed.js';
import { startDriftCheck } from '../src/client/drift/start-drift-check.js';
import { startAdoption } from '../src/client/keys/start-rotation.js';
import { applyImport } from '../src/client/imports/import-apply.js';
import { buildImportPlan } from '../src/client/imports/import-plan.js';
import { createPlatformClient } from '../src/platform/index.js';
import { DEFAULT_PLATFORM_KEY } from '../src/sim/index.js';
import { forEachLimited } from './check/temporal.js';
import { checkTemporal } from './check/temporal.js';
import type { InvariantResult } from './check/invariant.js';
import { Cleanup, sleep } from '../src/infra/cleanup.js';
import { chaosEvents, conduct, type ConductorReport } from './conductor.js';
import { Driver, ROTATION_TIMINGS, type Operation } from './driver.js';
import { clearFaults, faultRules, setFaults, Storm } from './faults.js';
import type { ChaosOptions } from './options.js';
import { makePlan } from './plan.js';
import { WorkerProcess } from './worker-process.js';
import { startWorld, type ChaosWorld } from './world.js';
import type { Pool } from '../src/db/pool.js';
import type { SimStateSnapshot } from '../src/sim/index.js';
import { topUpWorkflowId } from '../src/domain/ids.js';
import { topUpPurpose } from '../src/domain/top-up-ids.js';
import { transferKey } from '../activities/idempotency-keys.js';

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
  /** The restore drill: rows per table in the backup, rows per table the restore undid, what recovery did. */
  restore?: { backedUp: Record<string, number>; undid: Record<string, number>; recovery: string[] };
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
    /** The last time an operation ended, for the restore drill's stall check. */
    let lastEnd = { completed: 0, at: Date.now() };
    const progressTimer = setInterval(() => {
      log(
        `progress: ${driver.completed}/${plan.totalOperations} operations finished, ` +
          `${driver.started - driver.completed} in flight, workers ` +
          `${workers.map((w) => (w.running ? 'up' : 'DOWN')).join('/')}`,
      );
      if (driver.completed !== lastEnd.completed) lastEnd = { completed: driver.completed, at: Date.now() };
      // After the restore, runs whose tenant's record it took wait for the runbook's import, which the recovery
      // does: a load where nothing ended for a while goes to the recovery (an operator would not wait for them),
      // and what it left running is waited for after it. The plan's operations not yet started are not started.
      else if (drill.restoredAt !== null && Date.now() - lastEnd.at > STALL_MS && driver.inFlight > 0) {
        log(`load stalled ${STALL_MS / 1000} s after the restore with ${driver.inFlight} in flight: recovering`);
        driver.stop({ startNothingNew: true });
      }
    }, 15_000);
    const drill = {
      backedUp: {} as Record<string, number>,
      undid: {} as Record<string, number>,
      recovery: [] as string[],
      backedUpAt: null as number | null,
      /** The backup's time, as an operator gives it to `import closed --since`. */
      backupStartedAt: null as Date | null,
      restoredAt: null as number | null,
    };
    const databaseUrl = world.workerEnv.DATABASE_URL!;
    const events = chaosEvents(options, {
      simUrl: world.sim.url,
      records: {
        backUp: async () => {
          drill.backupStartedAt = new Date();
          drill.backedUp = (await backUpRecords(databaseUrl)).rows;
          drill.backedUpAt = Date.now();
          log(`records backed up: ${describeRows(drill.backedUp)}`);
        },
        restore: async () => {
          // From the moment the restore begins, a run may meet records already behind it.
          drill.restoredAt = Date.now();
          drill.undid = await restoreRecords(databaseUrl);
          log(`records restored; before the restore: ${describeRows(drill.undid)}`);
        },
      },
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
    if (options.restore) {
      drill.recovery.push(...(await recoverAfterRestore(world, `chaos-${runId}-`, drill.backupStartedAt, log)));
      // What the restore took from under the records: the operations that ran after the backup, by kind.
      const afterBackup = driver.operations.filter((op) => (op.startedAt ?? 0) > (drill.backedUpAt ?? Infinity));
      const madeAfter = `operations started after the backup: ${Object.entries(countBy(afterBackup, (op) => op.kind))
        .map(([kind, n]) => `${kind} ${n}`)
        .join(', ')}`;
      drill.recovery.unshift(madeAfter);
      log(`recovery: ${madeAfter}`);
      // The runbook's last step: a run that failed with a named cause while the records were behind is started
      // again, and must now complete.
      const failedAfterRestore = acceptRestoreFailures(driver.operations, drill.restoredAt, world.sim.state());
      // An onboarding whose tenant the recovery imported (its sub-account had no record) is done: the import recorded
      // it with its keys and transfers, and the adoption replaced its key; the runbook does not start it again.
      const { rows: importedRows } = await world.pool.query<{ ref: string }>(
        `SELECT external_ref AS ref FROM tenant_imports WHERE external_ref = ANY($1::text[])`,
        [failedAfterRestore.filter((op) => op.kind === 'onboard').map((op) => op.externalRef)],
      );
      const imported = new Set(importedRows.map((row) => row.ref));
      // A top-up of a tenant whose close completed since is not asked again (it moved no money: accepted above): an
      // operator does not fund a closed tenant, and the platform would refuse it (TENANT_CLOSED).
      const closedSince = (op: Operation) =>
        driver.operations.some(
          (close) =>
            close.kind === 'close' &&
            close.externalRef === op.externalRef &&
            close.outcome === 'completed' &&
            (close.startedAt ?? 0) > (op.startedAt ?? 0),
        );
      const topUpsOfClosed = failedAfterRestore.filter((op) => op.kind === 'top-up' && closedSince(op));
      const failedVisibly = failedAfterRestore.filter(
        (op) => !(op.kind === 'onboard' && imported.has(op.externalRef)) && !topUpsOfClosed.includes(op),
      );
      if (imported.size)
        log(`recovery: onboardings whose tenant the import recorded, not started again: ${imported.size}`);
      if (topUpsOfClosed.length)
        log(`recovery: top-ups of tenants closed since, not asked again: ${topUpsOfClosed.length}`);
      // Waited for as the load was, within a deadline of their own (the load's may have passed).
      driver.resume();
      const againDeadline = setTimeout(() => driver.stop(), options.timeoutMs);
      // One tenant's runs in the order they first started (a rotation before the close that followed it), tenants
      // side by side: as an operator starts them again.
      const byTenant = new Map<string, Operation[]>();
      for (const op of failedVisibly) byTenant.set(op.externalRef, [...(byTenant.get(op.externalRef) ?? []), op]);
      const again = (
        await Promise.all(
          [...byTenant.values()].map(async (ops) => {
            const outcomes: string[] = [];
            for (const op of ops.sort((a, b) => (a.startedAt ?? 0) - (b.startedAt ?? 0)))
              outcomes.push(await driver.again(op));
            return outcomes;
          }),
        )
      ).flat();
      // The runs the load left running (waiting for the import, or slow): each must now complete.
      const leftRunning = driver.operations.filter((op) => op.outcome === 'unfinished');
      const ended = await Promise.all(leftRunning.map((op) => driver.awaitUnfinished(op)));
      clearTimeout(againDeadline);
      if (leftRunning.length) {
        const waited = `runs left running by the load, waited for after the recovery: ${leftRunning.length}, ${
          ended.filter((o) => o === 'completed').length
        } completed`;
        drill.recovery.push(waited);
        log(`recovery: ${waited}`);
      }
      const line =
        `runs that failed with a named cause after the restore: ${failedVisibly.length}` +
        (failedVisibly.length
          ? ` (${Object.entries(countBy(failedVisibly, (op) => `${op.kind} ${op.outcome}`))
              .map(([what, n]) => `${what} ${n}`)
              .join(', ')}); started again: ${again.filter((o) => o === 'completed').length} completed`
          : '');
      drill.recovery.push(line);
      log(`recovery: ${line}`);
    }
    const temporal = await checkTemporal(
      world.client,
      createEncryptionCodec(parseMasterKeys(world.secretsKeys)),
      world.taskQueue,
    );
    const records = await checkRecords(world.pool, world.sim.state(), `chaos-${runId}-`, driver.operations);
    const tokensInRecords = await checkTokensInRecords(world.pool);
    const keySecrets = await checkKeySecrets(world.pool, `chaos-${runId}-`);
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
      keySecrets,
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
      ...(options.restore ? { restore: drill } : {}),
    };
  } catch (error) {
    // Said before the cleanup: a call still retrying when the connection closes may end the process first.
    log(`the run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    throw error;
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

/**
 * What an operator does after a restore (docs/operations.md, "Restoring Postgres from a backup"): a drift check of
 * the whole fleet, waited for; returns what it found and fixed, for the report.
 */
async function recoverAfterRestore(
  world: ChaosWorld,
  prefix: string,
  backupAt: Date | null,
  log: (line: string) => void,
): Promise<string[]> {
  const lines: string[] = [];
  const say = (line: string) => (lines.push(line), log(`recovery: ${line}`));
  const driftCheck = async (pass: string) => {
    const handle = await startDriftCheck(
      { client: world.client, pool: world.pool },
      {},
      { taskQueue: world.taskQueue },
    );
    const { totals, skipped } = await handle.result();
    say(
      `drift check (${pass}): ${totals.tenantsChecked} tenants, ${totals.findingsSeen} findings, ` +
        `${totals.fixesApplied} fixes, ${totals.failed} failed, ${totals.skipped} skipped`,
    );
    const ours = skipped.filter((s) => s.externalRef.startsWith(prefix));
    if (ours.length) say(`  skipped: ${ours.map((s) => `${s.externalRef} (${s.reason})`).join('; ')}`);
    const { rows } = await world.pool.query<{ kind: string; fix: string | null; n: number }>(
      `SELECT kind, fix, count(*)::int AS n FROM drift_findings
        WHERE last_check_id = (SELECT max(id) FROM drift_checks) GROUP BY kind, fix ORDER BY kind`,
    );
    say(`  found: ${rows.map((r) => `${r.kind} ${r.n}${r.fix ? ` (${r.fix})` : ''}`).join(', ') || 'nothing'}`);
  };
  // Twice: a sub-account recorded by the first pass shows its keys, wallet and state to the second.
  await driftCheck('adopt what the records lost');
  await driftCheck('follow what our runs did');
  // A sub-account no record carries at all (onboarded after the backup) is imported: recorded with its keys as
  // unmanaged and its transfers under our keys as made.
  const platform = createPlatformClient({
    baseUrl: world.sim.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    timeoutMs: 5_000,
  });
  const plan = await buildImportPlan({ platform, db: world.pool });
  const only = plan.rows.filter((r) => r.externalRef?.startsWith(prefix) && r.importable).map((r) => r.externalRef!);
  const imported = only.length
    ? await applyImport({ client: world.client, db: world.pool }, plan, {
        only,
        requestedBy: 'chaos-restore-drill',
        taskQueue: world.taskQueue,
      })
    : { results: [] };
  const failedImports = imported.results.filter((r) => !r.ok);
  say(
    `imports: ${imported.results.length - failedImports.length} of ${only.length} sub-accounts without a record` +
      (failedImports.length ? `; failed: ${failedImports.map((r) => r.externalRef).join(', ')}` : ''),
  );
  // A tenant onboarded and closed between the backup and the restore: no record, a closed sub-account the platform
  // answers nothing about; recorded closed from its runs, its transfers as made.
  if (backupAt) {
    const closed = await importClosedTenants({ client: world.client, pool: world.pool }, backupAt, {
      apply: true,
      requestedBy: 'chaos-restore-drill',
    });
    const ours = closed.rows.filter((row) => row.externalRef.startsWith(prefix));
    const skipped = ours.filter((row) => row.problems.length);
    say(
      `closed since the backup, from their runs: ${ours.length} tenants, ` +
        `${closed.recorded.filter((ref) => ref.startsWith(prefix)).length} recorded` +
        (skipped.length
          ? `; not recorded: ${skipped.map((r) => `${r.externalRef} (${r.problems[0]})`).join('; ')}`
          : ''),
    );
  }
  // Every key whose secret the restore lost is replaced by an adoption rotation: a new key deployed, the old one
  // revoked only once quiet.
  const { rows: unmanaged } = await world.pool.query<{ ref: string; slot: string }>(
    `SELECT DISTINCT k.external_ref AS ref, k.slot FROM tenant_keys k JOIN tenants t USING (external_ref)
      WHERE k.status = 'unmanaged' AND t.status IN ('active', 'suspended')`,
  );
  let adopted = 0;
  const failures: string[] = [];
  await forEachLimited(unmanaged, 8, async ({ ref, slot }) => {
    try {
      const handle = await startAdoption(
        { client: world.client, db: world.pool },
        {
          externalRef: ref,
          slot,
          reason: 'restore drill: replace a key whose secret the restore lost',
          options: ROTATION_TIMINGS,
        },
        { taskQueue: world.taskQueue },
      );
      await handle.result();
      adopted += 1;
    } catch (error) {
      failures.push(`${ref}/${slot}: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  say(
    `adoption rotations: ${adopted} of ${unmanaged.length} slots replaced${failures.length ? `; failed: ${failures.slice(0, 5).join('; ')}` : ''}`,
  );
  await driftCheck('after the adoptions');
  // What the last check still holds open, with its evidence: what an operator decides by hand (the runbook's step 5).
  const { rows: open } = await world.pool.query<{ kind: string; ref: string; subject: string; evidence: string }>(
    `SELECT kind, external_ref AS ref, subject, evidence::text AS evidence FROM drift_findings
      WHERE status = 'open' AND external_ref LIKE $1::text ORDER BY kind, external_ref`,
    [`${prefix}%`],
  );
  for (const f of open) say(`  open: ${f.kind} ${f.ref} ${f.subject}: ${f.evidence.slice(0, 600)}`);
  return lines;
}

/** A restore drill's load in which nothing ended for this long after the restore goes to the recovery. */
const STALL_MS = 90_000;

/**
 * A run that ends after the records went back in time may fail, as long as it fails visibly with a cause the runbook
 * names (its records are gone or behind): recovery is the runbook's, then the run is started again. Returns them.
 */
const RESTORE_CAUSES = [
  'failed:TENANT_NOT_FOUND',
  'failed:TENANT_NOT_ACTIVE',
  'failed:TENANT_NOT_PROVISIONED',
  'failed:NO_ACTIVE_KEY',
  'failed:SECRET_MISSING',
  'failed:KEY_RECORD_STATE',
  // A top-up run started (not through the gateway, which refuses it before any run) while the tenant's new money
  // was held for its drift check: asked again after the check, under a new key.
  'failed:RECORDS_RESTORED',
];
function acceptRestoreFailures(
  operations: Operation[],
  restoredAt: number | null,
  sim: Pick<SimStateSnapshot, 'subaccounts' | 'transfers'>,
): Operation[] {
  if (restoredAt === null) return [];
  const accepted: Operation[] = [];
  for (const op of [...operations]) {
    const afterRestore = op.endedAt !== null && op.endedAt !== undefined && op.endedAt >= restoredAt;
    // A failed top-up is asked again under a new key: only when its own key moved no money (else that would pay twice).
    if (op.kind === 'top-up' && movedMoney(op, sim)) continue;
    if (afterRestore && RESTORE_CAUSES.includes(op.outcome) && !op.accepted.includes(op.outcome)) {
      op.accepted.push(op.outcome);
      accepted.push(op);
    }
  }
  return accepted;
}

/** Whether the platform shows a transfer under any generation of this top-up's key. */
function movedMoney(op: Operation, sim: Pick<SimStateSnapshot, 'subaccounts' | 'transfers'>): boolean {
  const callerKey = op.workflowId.slice(topUpWorkflowId(op.externalRef, '').length);
  const digest = transferKey(op.externalRef, topUpPurpose(callerKey), 1).slice(0, -'-1'.length);
  const subaccounts = new Set(sim.subaccounts.filter((x) => x.externalRef === op.externalRef).map((x) => x.id));
  return sim.transfers.some(
    (t) => subaccounts.has(t.subaccountId) && (t.idempotencyKey ?? '').startsWith(`${digest}-`),
  );
}

function describeRows(rows: Record<string, number>): string {
  return Object.entries(rows)
    .filter(([, n]) => n > 0)
    .map(([table, n]) => `${table} ${n}`)
    .join(', ');
}

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

function sum<T>(items: T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}
