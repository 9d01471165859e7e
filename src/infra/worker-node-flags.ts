/**
 * The Node flags a worker process is launched with. They size the heap V8 makes as the process starts (its
 * main thread's, where the activities and the SDK's bridge run), which the worker cannot change once it runs,
 * so they are the launcher's: `startTenantctl` (npm run cluster, the benchmarks) and the image (Dockerfile,
 * hence compose). A worker launched without them says so as it starts (`semi-space: V8's own`).
 *
 * `--max-semi-space-size=4`: V8's young generation, 16 MB semi-spaces by default on 64-bit, filled with the
 * short-lived garbage of every activation and activity. Capped at 4 MB the worker peaked at 227–231 MB with
 * 500 onboardings in flight against 264–273 MB, its CPU per onboarding unchanged within the noise, and a
 * fleet rotation of 300 at 100/s at 310–342 MB against 354–408 MB (docs/benchmarks.md, operations.md#worker-memory).
 */
export const WORKER_SEMI_SPACE_MB = 4;

export const WORKER_NODE_FLAGS: readonly string[] = [`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];

const SEMI_SPACE_FLAG = /^--max[-_]semi[-_]space[-_]size(?:=(.*))?$/;

/**
 * The semi-space a process was launched with, in MB, from NODE_OPTIONS then its own flags (the command line
 * wins, as in Node), or null when neither sets one: V8's own.
 */
export function launchedSemiSpaceMb(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): number | null {
  const flags = [...(nodeOptions ?? '').split(/\s+/).filter(Boolean), ...execArgv];
  let mb: number | null = null;
  flags.forEach((flag, i) => {
    const match = SEMI_SPACE_FLAG.exec(flag);
    if (!match) return;
    const value = Number(match[1] ?? flags[i + 1]);
    if (Number.isFinite(value) && value > 0) mb = value;
  });
  return mb;
}

/** The flags to launch a worker with: none when its NODE_OPTIONS already sizes the semi-space (the operator's). */
export function workerNodeFlags(nodeOptions: string | undefined): string[] {
  return launchedSemiSpaceMb([], nodeOptions) === null ? [...WORKER_NODE_FLAGS] : [];
}
