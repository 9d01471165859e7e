import { sleep } from '../src/infra/cleanup.js';
import { faultRules, setFaults, Storm } from './faults.js';
import { RESTORE_POINTS, type ChaosOptions } from './options.js';
import type { RestartablePostgres } from './postgres.js';
import type { WorkerProcess } from './worker-process.js';

/** The application_name of the worker's pool (src/main/worker.ts). */
const WORKER_APPLICATION_NAME = 'tenant-orchestrator-worker';

/**
 * The chaos itself, at points of the run's progress (share of planned operations finished) rather
 * than at fixed times, so a slow machine still gets every event while work is in flight: storms
 * switched on and off, worker SIGKILLs each followed by a restart, Postgres ending the worker's connections, and one
 * Postgres restart.
 */
export interface ChaosEvent {
  at: number;
  name: string;
  run(): Promise<void>;
}

export interface ConductorReport {
  fired: Array<{ name: string; at: string; progress: number }>;
  skipped: string[];
}

export interface ChaosTargets {
  simUrl: string;
  /** Kill #i hits workers[i % n]: with two or more, the others keep working meanwhile. */
  workers: WorkerProcess[];
  postgres: RestartablePostgres;
  /** The cluster's server, when the run has one (a dev server keeps no state across a restart). */
  temporal?: { restartServer(downMs: number): Promise<void> } | undefined;
  /** The restore drill's backup and restore of the records (chaos/records-backup.ts). */
  records?: { backUp(): Promise<void>; restore(): Promise<void> } | undefined;
  random: () => number;
}

export function chaosEvents(options: ChaosOptions, deps: ChaosTargets): ChaosEvent[] {
  // A storm lasts a while (retries must ride it out), then the base faults come back.
  const storm = (at: number, kind: Storm, seconds: number): ChaosEvent => ({
    at,
    name: `${kind} storm for ${seconds} s`,
    run: async () => {
      await setFaults(deps.simUrl, faultRules(options, kind));
      await sleep(seconds * 1000);
      await setFaults(deps.simUrl, faultRules(options, Storm.none));
    },
  });
  const events: ChaosEvent[] = [
    storm(0.12, Storm.unavailable, options.stormSeconds),
    storm(0.38, Storm.rateLimited, options.stormSeconds),
    storm(0.7, Storm.both, Math.ceil(options.stormSeconds / 2)),
  ];
  const kills = options.workerKills;
  for (let i = 0; i < kills; i++) {
    const at = kills === 1 ? 0.3 : 0.08 + (0.84 * i) / (kills - 1);
    const worker = deps.workers[i % deps.workers.length]!;
    events.push({
      at,
      name: `worker SIGKILL #${i + 1}${deps.workers.length > 1 ? ` (worker ${(i % deps.workers.length) + 1} of ${deps.workers.length})` : ''}`,
      run: async () => {
        await worker.kill();
        await sleep(500 + Math.floor(deps.random() * 2500));
        const restarted = worker.start();
        // With other workers up, the run goes on while this one starts again (that takes a while
        // under load): the next events hit a cluster with one worker still coming back.
        if (deps.workers.length > 1) restarted.catch(() => undefined);
        else await restarted;
      },
    });
  }
  for (let i = 0; i < options.workerPauses; i++) {
    const worker = deps.workers[(i + 1) % deps.workers.length]!;
    const seconds = options.pauseSeconds * (0.75 + deps.random() * 0.5);
    events.push({
      at: 0.05 + (0.85 * (i + 0.5)) / options.workerPauses,
      name: `worker pause #${i + 1} (${seconds.toFixed(1)} s)`,
      run: () => worker.pause(seconds * 1000),
    });
  }
  for (let i = 0; i < options.connectionDrops; i++) {
    events.push({
      at: 0.2 + (0.6 * (i + 0.5)) / options.connectionDrops,
      name: `Postgres ends the worker's connections #${i + 1}`,
      run: async () => void (await deps.postgres.terminateConnections(WORKER_APPLICATION_NAME)),
    });
  }
  const temporal = deps.temporal;
  if (temporal) {
    for (let i = 0; i < options.temporalRestarts; i++) {
      events.push({
        at: 0.45 + (0.4 * i) / Math.max(1, options.temporalRestarts),
        name: `Temporal server restart #${i + 1}`,
        run: () => temporal.restartServer(3000),
      });
    }
  }
  const records = deps.records;
  if (options.restore && records) {
    events.push({ at: RESTORE_POINTS.backUp, name: 'records backed up', run: () => records.backUp() });
    events.push({
      at: RESTORE_POINTS.restore,
      name: 'records restored from the backup',
      run: async () => {
        await records.restore();
        // A restored server is a new server to its clients: every connection of the worker ends.
        await deps.postgres.terminateConnections(WORKER_APPLICATION_NAME);
      },
    });
  }
  if (options.restartPostgres) {
    events.push({ at: kills === 1 ? 0.55 : 0.5, name: 'Postgres restart', run: () => deps.postgres.restart(3000) });
  }
  return events.sort((a, b) => a.at - b.at);
}

/** Runs the events in order as progress passes each; returns when all ran or `done()` says stop. */
export async function conduct(
  events: ChaosEvent[],
  progress: () => number,
  done: () => boolean,
  log: (line: string) => void,
): Promise<ConductorReport> {
  const report: ConductorReport = { fired: [], skipped: [] };
  const queue = [...events];
  while (queue.length > 0 && !done()) {
    const next = queue[0]!;
    const now = progress();
    if (now >= next.at) {
      queue.shift();
      log(`chaos: ${next.name} (progress ${(now * 100).toFixed(0)} %)`);
      try {
        await next.run();
        report.fired.push({ name: next.name, at: new Date().toISOString(), progress: now });
      } catch (error) {
        log(`chaos: ${next.name} failed: ${error instanceof Error ? error.message : String(error)}`);
        report.skipped.push(`${next.name} (failed: ${String(error)})`);
      }
    } else await sleep(250);
  }
  report.skipped.push(...queue.map((e) => `${e.name} (the run ended first)`));
  return report;
}
