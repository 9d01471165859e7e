/**
 * What one chaos run does. The defaults are the documented `npm run chaos` run (about 10 minutes on
 * a 2-core machine); the test suite runs a small version of the same thing.
 */
export interface ChaosOptions {
  /** Onboardings started; rotations and closes are drawn from these tenants. */
  tenants: number;
  /** Seeds the plan (who rotates, who closes, amounts) and the simulator's fault rolls. */
  seed: number;
  /** Onboardings started per second while loading. */
  startRate: number;
  /** Share of tenants rotated once after onboarding (some of them twice). */
  rotateShare: number;
  /** Share of tenants closed; half of these closes race a rotation that is still running. */
  closeShare: number;
  /** Probability of `drop-after-commit` on every mutating route (POST, PUT, DELETE). */
  dropProbability: number;
  /** Probability of a 503 / 429 while a storm is on. */
  stormProbability: number;
  /** How long each 503 / 429 storm lasts. */
  stormSeconds: number;
  /** SIGKILLs of the worker process (each followed by a restart). */
  workerKills: number;
  /** Times Postgres ends every connection of the worker at once (a failover or proxy restart as the worker sees it). */
  connectionDrops: number;
  /** Stop and restart the embedded Postgres once, mid-run. */
  restartPostgres: boolean;
  /**
   * The restore drill (issue 48): back the records up early in the run, restore the backup late in it while the
   * worker and Temporal keep running, then let the orchestrator recover (the drift check) before the checks.
   */
  restore: boolean;
  /** Shares of tenants topped up and suspended after onboarding (the restore drill moves money after its backup). */
  topUpShare: number;
  suspendShare: number;
  /** Hard limit for load + settle; whatever is still open then is reported by the checker. */
  timeoutMs: number;
  /**
   * A Temporal cluster (the server on Postgres, as `npm run cluster` starts it) instead of the dev
   * server, for the production topology: several worker processes and Temporal server restarts.
   */
  cluster: boolean;
  /** Worker processes polling the same task queue; SIGKILLs go round them, so the others keep working. */
  workers: number;
  /** Restarts of the Temporal server mid-run (cluster only: a dev server forgets everything). */
  temporalRestarts: number;
  /**
   * Worker pauses (SIGSTOP, then SIGCONT after `pauseSeconds`), round the workers: a worker cut off mid-step, not
   * dead. Its workflow tasks time out and are run again elsewhere while its local activity attempts are frozen
   * mid-flight; when it wakes they go on, beside the new attempts of the same steps (two attempts at once).
   */
  workerPauses: number;
  pauseSeconds: number;
  /** The onboardings' workflow task timeout (absent: Temporal's 10 s); short in the overlap mode. */
  workflowTaskTimeout?: string | undefined;
  /** Exact numbers of rotations and closes instead of the shares (the cluster test asks for 10 and 5). */
  exactCounts?: { rotations: number; closes: number };
  /** An existing Temporal frontend (the test suite's); otherwise a headless dev server is started. */
  temporalAddress?: string | undefined;
  temporalNamespace: string;
  /** Progress lines; the table is printed by the caller. */
  log: (line: string) => void;
}

export const DEFAULT_OPTIONS: Omit<ChaosOptions, 'log'> = {
  tenants: 500,
  seed: 20_261_122,
  startRate: 20,
  rotateShare: 0.3,
  closeShare: 0.12,
  dropProbability: 0.1,
  stormProbability: 0.35,
  stormSeconds: 20,
  workerKills: 4,
  connectionDrops: 3,
  restartPostgres: true,
  restore: false,
  topUpShare: 0,
  suspendShare: 0,
  cluster: false,
  workers: 1,
  temporalRestarts: 0,
  workerPauses: 0,
  pauseSeconds: 8,
  timeoutMs: 12 * 60_000,
  temporalNamespace: 'default',
};

/** The small version for the test suite: every kind of fault, one kill, a Postgres restart. */
export const SMALL_OPTIONS: Omit<ChaosOptions, 'log'> = {
  ...DEFAULT_OPTIONS,
  tenants: 20,
  startRate: 2,
  stormSeconds: 6,
  connectionDrops: 1,
  rotateShare: 0.4,
  closeShare: 0.2,
  workerKills: 1,
  // Generous: on a loaded 2-core CI machine a close may wait out a storm's retries.
  timeoutMs: 150_000,
};

/**
 * `npm run chaos -- --restore` adds these (issue 48): top-ups and suspends beside the onboardings, rotations and
 * closes, the records backed up at 30 % of the run and restored at 75 %, with every other fault still on.
 */
export const RESTORE_ADDITIONS = { restore: true, topUpShare: 0.5, suspendShare: 0.1 } as const;

/**
 * The drift policy of the drill's worker, as the runbook (docs/operations.md, "Restoring Postgres from a backup")
 * sets it after a restore: every fix that records what the platform shows, and one that changes it only through the
 * quiet gate (a superseded key of ours the records lost, revoked once quiet for DRIFT_QUIET_PERIOD).
 */
export const RESTORE_DRIFT_POLICY =
  'transfer_unknown=fix,transfer_unrecorded=fix,key_unrecorded=fix,key_revoked_on_platform=fix,' +
  'subaccount_unrecorded=fix,onboarding_unrecorded=fix,subaccount_gone=fix,subaccount_suspended=fix,' +
  'subaccount_not_suspended=fix,rotation_unrecorded=fix,key_orphan=fix';

/** Where the drill backs up and restores, as shares of the run's progress. */
export const RESTORE_POINTS = { backUp: 0.3, restore: 0.75 } as const;

/**
 * `npm run chaos -- --cluster` adds these: the server on Postgres, two workers (each SIGKILL hits
 * one while the other keeps polling) and a Temporal server restart.
 */
export const CLUSTER_ADDITIONS = { cluster: true, workers: 2, temporalRestarts: 1 } as const;

/**
 * `npm run chaos -- --overlap` adds these (issue 44): workers paused while their local activities are in flight and
 * the onboardings' workflow tasks timing out after 2 s, so two attempts of one step run at once, often: a task that
 * times out loses its sticky queue, and the other worker runs it (and its local activities) again while the paused
 * one's attempts are frozen. The kills stay; the pauses come on top. Each pause (2.6-4.4 s) stays under the SDK's
 * workflow isolate execution timeout (5 s): a process frozen longer mid-activation has Node abort it on wake
 * ("async hook stack has become corrupted", temporalio/sdk-typescript#939), which is a kill, not an overlap.
 */
export const OVERLAP_ADDITIONS = { workerPauses: 12, pauseSeconds: 3.5, workflowTaskTimeout: '2s' } as const;

/**
 * The cluster test (test/integration/cluster.test.ts): 50 onboardings, 10 rotations, 5 closes on
 * two workers; one worker SIGKILLed and the Temporal server restarted mid-run, platform faults on.
 * No Postgres restart: the dev-server chaos test covers that, and the time goes to the cluster here.
 */
export const CLUSTER_TEST_OPTIONS: Omit<ChaosOptions, 'log'> = {
  ...SMALL_OPTIONS,
  ...CLUSTER_ADDITIONS,
  tenants: 50,
  startRate: 2,
  exactCounts: { rotations: 10, closes: 5 },
  workerKills: 1,
  connectionDrops: 0,
  restartPostgres: false,
  timeoutMs: 240_000,
};
