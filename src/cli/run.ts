import type { Command } from 'commander';
import type { CliRuntime } from './runtime.js';
import type { GatewayClient } from '../api-client/gateway-client.js';
import { printJson, printLine } from './output.js';
import { gatewayFor } from './early-read.js';

/**
 * What command actions share, light enough to load for `tenantctl --help`: the runtime (pg, the
 * Temporal client and the codec) is imported only when a command body runs. Every command file
 * keeps to that rule: static imports are types and commander; dependencies load inside the action.
 */
let operatorTokenFlag: string | undefined;

/** The global `--operator-token` (set by program.ts before an action runs); TENANTCTL_OPERATOR_TOKEN otherwise. */
export function setOperatorTokenFlag(token: string | undefined): void {
  operatorTokenFlag = token;
}

/**
 * Runs one of the commands that administer the infrastructure itself (migrate, setup, reseal,
 * parent-key import): they need the server's credentials (DATABASE_URL, SECRETS_KEYS, Temporal) and
 * say so in their help. Every operator command goes through the gateway instead (`withGateway`).
 */
export async function withRuntime<T>(fn: (runtime: CliRuntime) => Promise<T>): Promise<T> {
  const { createCliRuntime } = await import('./runtime.js');
  const runtime = createCliRuntime(operatorTokenFlag);
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Runs an operator command that talks to the gateway only: no database, no master key, no Temporal
 * connection is opened (nor their modules loaded, see gateway-access.ts), and every rule (who may, approvals,
 * limits) is decided by the server.
 */
export async function withGateway<T>(fn: (gateway: GatewayClient) => Promise<T>): Promise<T | undefined> {
  const opened = gatewayFor(operatorTokenFlag);
  try {
    return await fn(await opened);
  } catch (error) {
    if (!(error instanceof Error && error.name === 'StillWaitingError')) throw error;
    // `--timeout` ended first: where the run stands is the answer (exit 4); the run goes on.
    const { EXIT_CODES, standingLines, StillWaitingError } = await import('./poll-run.js');
    if (!(error instanceof StillWaitingError)) throw error;
    if (waitFlags.json) printJson({ stillWaiting: true, timeout: error.timeout, runs: error.runs });
    else for (const line of standingLines(error)) printLine(line);
    process.exitCode = EXIT_CODES.stillWaiting;
    return undefined;
  }
}

/** The flags of the command about to run that the waits read: `--timeout` and `--json`. */
let waitFlags: { json?: boolean } = {};

/**
 * Every command that waits for a run takes `--timeout <duration>`: added here to each command with a
 * `--wait` (or `--no-wait`) flag, so none is left out; `import apply`, which always waits, declares it.
 */
export function addWaitTimeouts(command: Command): void {
  for (const sub of command.commands) {
    const waits = sub.options.some((o) => o.attributeName() === 'wait');
    if (waits && !sub.options.some((o) => o.long === '--timeout'))
      sub.option(
        '--timeout <duration>',
        'with --wait: stop waiting after this long (e.g. 30s, 10m): prints where the run stands, exit 4; the run ' +
          'goes on',
      );
    addWaitTimeouts(sub);
  }
}

/**
 * Before a command's action (program.ts's preAction hook): its `--timeout` starts now. `--timeout` is
 * refused (exit 2) when the command will not wait, or when it is not a duration.
 */
export async function setWaitFlags(command: Command): Promise<void> {
  const opts = command.opts<{ timeout?: string; wait?: boolean; json?: boolean }>();
  waitFlags = { json: opts.json === true };
  const { setWaitDeadline } = await import('./poll-run.js');
  if (opts.timeout === undefined) return setWaitDeadline(undefined, undefined);
  const { DURATION_PATTERN, msOf } = await import('../domain/durations.js');
  const waits = command.options.some((o) => o.attributeName() === 'wait');
  if (waits && opts.wait !== true)
    throw new UsageError('--timeout: only with --wait (without it the command does not wait)');
  if (opts.timeout !== '0' && !DURATION_PATTERN.test(opts.timeout))
    throw new UsageError('--timeout: must be a duration like 30s, 10m or 2h (or 0: look once)');
  setWaitDeadline(opts.timeout, opts.timeout === '0' ? 0 : msOf(opts.timeout));
}

/**
 * A ref or id as one path segment of a gateway URL: a `/` in it can never change the route. `.` and
 * `..` cannot be sent as a segment at all (URL parsing resolves them, escaped or not), so they are
 * refused here by name, as the gateway refuses them.
 */
export function segment(value: string, field = 'id'): string {
  if (value === '.' || value === '..') throw new UsageError(`${field}: must not be "${value}"`);
  return encodeURIComponent(value);
}

/** Reported like every input problem: one line, exit code 2 (see src/main/report-error.ts). */
class UsageError extends Error {
  override name = 'UsageError';
  readonly problems: string[];
  constructor(problem: string) {
    super(problem);
    this.problems = [problem];
  }
}
