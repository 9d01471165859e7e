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
  /** Hard limit for load + settle; whatever is still open then is reported by the checker. */
  timeoutMs: number;
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
