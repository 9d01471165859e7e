import type { GatewayClient, GatewayRequest } from '../api-client/gateway-client.js';
import type { RunView } from '../client/run-status.js';
import type { WaitView } from '../client/current-wait.js';
import { printErrorLine } from './output.js';

/**
 * Every `--wait` of tenantctl is a poll of the gateway (the CLI holds no Temporal handle): the one
 * loop is here, and so are the one reading of a run that has ended, the one `--timeout` and the one
 * rule of exit codes (the table: docs/exit-codes.md, checked against these constants by
 * test/unit/exit-codes.test.ts).
 */

/** The exit codes of every command that waits for a run (`--wait`, or `import apply`). */
export const EXIT_CODES = {
  /** The run completed and did what was asked. */
  completed: 0,
  /** The run failed, was cancelled or terminated; or the command itself met an error. */
  failed: 1,
  /** Input or configuration the caller must fix (one line a problem); nothing was started. */
  input: 2,
  /** The run completed, but its outcome is a refusal (REFUSALS): nothing of what was asked was done. */
  refused: 3,
  /** `--timeout` ended while the run was still going: where it stands is printed; the run goes on. */
  stillWaiting: 4,
} as const;

/**
 * The completed outcomes that are refusals, by the result field that says so. Every workflow result a
 * `--wait` command prints is read through `refusalOf`; docs/exit-codes.md lists each of these.
 */
export const REFUSALS = [
  {
    field: 'state',
    value: 'cap_refused',
    run: 'fundTenant',
    meaning: 'a spend cap refused the top-up (nothing was sent)',
  },
  {
    field: 'state',
    value: 'skipped',
    run: 'fundTenant',
    meaning: "an auto top-up was skipped: the parent's balance refused it, or the tenant's balance changed",
  },
  {
    field: 'outcome',
    value: 'refused',
    run: 'revokeTenantKeySlot',
    meaning: 'the quiet gate refused the revoke: the key is still in use (it stays active)',
  },
  {
    field: 'outcome',
    value: 'aborted',
    run: 'rotateTenantKey, adoptTenantKeys',
    meaning: 'an operator aborted the rotation or adoption: the old key stays current',
  },
  {
    field: 'outcome',
    value: 'held',
    run: 'convergeTenantPlan',
    meaning: "a retired slot's key is in use (or another run holds a slot): nothing of the version was applied",
  },
  {
    field: 'outcome',
    value: 'skipped',
    run: 'convergeTenantPlan',
    meaning: 'the tenant is not active: it was not moved onto the version',
  },
  {
    field: 'status',
    value: 'close_cancelled',
    run: 'closeTenant',
    meaning: 'an operator cancelled the delayed close inside its window: the tenant is back as it was',
  },
] as const;

/** The refusal a completed run's result is (field=value: meaning), or null when it did what was asked. */
export function refusalOf(result: unknown): string | null {
  if (!result || typeof result !== 'object') return null;
  const fields = result as Record<string, unknown>;
  const refusal = REFUSALS.find((r) => fields[r.field] === r.value);
  return refusal ? `${refusal.field} ${refusal.value}: ${refusal.meaning}` : null;
}

/**
 * A completed run's result, with the exit code the table gives it (3 for a refusal; the command still
 * prints the result). A run that ended otherwise is an error (exit 1) naming why.
 */
export function completedResult<R>(run: RunView<R> | EndedRun, failed?: () => Error): R {
  if (run.status !== 'COMPLETED')
    throw failed?.() ?? new Error(`${run.workflowId} ended ${run.status}${run.failure ? `: ${endedWhy(run)}` : ''}`);
  if (refusalOf(run.result) !== null) markRefused();
  return run.result as R;
}

/** The command's answer is a refusal (exit 3), unless something worse already set the code. */
export function markRefused(): void {
  if (!process.exitCode) process.exitCode = EXIT_CODES.refused;
}

/** What an ended run says, in the shape both run views share. */
interface EndedRun {
  workflowId: string;
  status: string;
  result: unknown;
  failure: { message: string; type: string | null; causes: string[] } | null;
}

/** Where a run stands when `--timeout` ends: what the command prints then. */
export interface Standing {
  workflowId: string;
  status: string;
  waiting: WaitView | null;
}

/** `--timeout` ended with runs still going (exit 4): run.ts prints where they stand. */
export class StillWaitingError extends Error {
  override name = 'StillWaitingError';
  constructor(
    readonly timeout: string,
    readonly runs: Standing[],
  ) {
    super(`still waiting after ${timeout}: ${runs.map((r) => r.workflowId).join(', ') || 'the run'} goes on`);
  }
}

/** The wait's deadline (`--timeout`), set once per command before its action runs (see run.ts). */
let deadline: { at: number; timeout: string } | undefined;

export function setWaitDeadline(timeout: string | undefined, ms: number | undefined, now = Date.now()): void {
  deadline = timeout !== undefined && ms !== undefined ? { at: now + ms, timeout } : undefined;
}

/**
 * Polls `probe` until it answers. With a `--timeout` deadline, the last look is at the deadline: then
 * `StillWaitingError` with where things stand (`standing`, read from the last answer). Nothing is
 * cancelled: the run goes on.
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined>,
  everyMs = 250,
  standing: () => Standing[] = () => [],
): Promise<T> {
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    const left = deadline ? deadline.at - Date.now() : Infinity;
    if (left <= 0) throw new StillWaitingError(deadline!.timeout, standing());
    await new Promise((resolve) => setTimeout(resolve, Math.min(everyMs, left)));
  }
}

/** Whether a run has ended (a continued-as-new run goes on under the same id). */
export function hasEnded(run: { status: string } | null | undefined): boolean {
  return !!run && run.status !== 'RUNNING' && run.status !== 'CONTINUED_AS_NEW';
}

/** Why an ended run did not complete, in one line: its failure's type, message and causes. */
function endedWhy(run: Pick<EndedRun, 'status' | 'failure'>): string {
  const failure = run.failure;
  return failure
    ? `${failure.type ? `${failure.type}: ` : ''}${[failure.message, ...failure.causes].join(': ')}`
    : `ended ${run.status}`;
}

/** A run's standing, as `--timeout` prints it. */
export function standingOf(run: { workflowId: string; status: string; waiting?: WaitView | null }): Standing {
  return { workflowId: run.workflowId, status: run.status, waiting: run.waiting ?? null };
}

/** One line a run for a `--timeout` that ended: where it stands, its wait and the decisions that apply. */
export function standingLines(error: StillWaitingError): string[] {
  const lines = error.runs.map((run) => {
    const wait = run.waiting;
    if (!wait) return `${run.workflowId}: ${run.status}, not waiting for a decision (still working)`;
    const decide = wait.decisions.length > 0 ? `; decisions: ${wait.decisions.join(', ')}` : '';
    return `${run.workflowId}: ${run.status}, waiting (${wait.stage}) since ${wait.since}: ${wait.waitingFor}${decide}`;
  });
  return [`still waiting after --timeout ${error.timeout} (nothing was cancelled: the run goes on)`, ...lines];
}

/**
 * The wait lines of a `--wait`, on stderr (stdout stays the result, JSON or text): one line when the
 * run starts waiting (or waits for something else), one when the wait ends.
 */
export function waitReporter(write: (line: string) => void = printErrorLine) {
  let shown: WaitView | null = null;
  return (waiting: WaitView | null | undefined): void => {
    const now = waiting ?? null;
    if (shown && (!now || now.stage !== shown.stage || now.since !== shown.since))
      write(`wait over (${shown.stage}), waited since ${shown.since}`);
    if (now && (!shown || now.stage !== shown.stage || now.since !== shown.since)) {
      const decide = now.decisions.length > 0 ? ` — decisions: ${now.decisions.join(', ')}` : '';
      write(`waiting (${now.stage}): ${now.waitingFor}${decide}`);
    }
    shown = now;
  };
}

/**
 * Polls a status route answering `{ run: RunView | null, ... }` until its run has ended, reporting the
 * run's waits as they start and end; the whole answer is returned (some routes carry more than the run).
 */
export async function endedRunAt<A extends { run: RunView<R> | null }, R = unknown>(
  gateway: GatewayClient,
  path: string,
  query?: GatewayRequest['query'],
  pollMs = 500,
): Promise<A & { run: RunView<R> }> {
  const report = waitReporter();
  let last: RunView<R> | null = null;
  return pollUntil(
    async () => {
      const answer = await gateway.get<A>(path, query);
      last = answer.run;
      report(answer.run?.waiting);
      return answer.run && hasEnded(answer.run) ? (answer as A & { run: RunView<R> }) : undefined;
    },
    pollMs,
    () => (last ? [standingOf(last)] : []),
  );
}

/**
 * `--wait` for a run the gateway started: polls a status route answering `{ run: RunView | null }`
 * until the run has ended. A completed run gives its result (exit 3 when it is a refusal); one that
 * ended otherwise is an error (exit 1) naming why; `--timeout` ending first is exit 4.
 */
export async function resultOfRun<R>(gateway: GatewayClient, path: string, pollMs = 500): Promise<R> {
  const { run } = await endedRunAt<{ run: RunView<R> | null }, R>(gateway, path, undefined, pollMs);
  return completedResult(run);
}
