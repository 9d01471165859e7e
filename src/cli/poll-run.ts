import type { GatewayClient } from '../client/gateway-client.js';
import type { RunView } from '../client/run-status.js';
import type { WaitView } from '../client/current-wait.js';

/**
 * Every `--wait` of tenantctl is a poll of the gateway (the CLI holds no Temporal handle): the one
 * loop is here, and so is the one reading of a run that has ended.
 */
export async function pollUntil<T>(probe: () => Promise<T | undefined>, everyMs = 250): Promise<T> {
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Whether a run has ended (a continued-as-new run goes on under the same id). */
export function hasEnded(run: { status: string } | null | undefined): boolean {
  return !!run && run.status !== 'RUNNING' && run.status !== 'CONTINUED_AS_NEW';
}

/** Why an ended run did not complete, in one line: its failure's type, message and causes. */
export function endedWhy(run: RunView<unknown>): string {
  const failure = run.failure;
  return failure
    ? `${failure.type ? `${failure.type}: ` : ''}${[failure.message, ...failure.causes].join(': ')}`
    : `ended ${run.status}`;
}

/**
 * The wait lines of a `--wait`, on stderr (stdout stays the result, JSON or text): one line when the
 * run starts waiting (or waits for something else), one when the wait ends.
 */
export function waitReporter(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)) {
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
 * `--wait` for a run the gateway started: polls a status route answering `{ run: RunView | null }`
 * until the run has ended. A completed run gives its result; one that ended otherwise is an error
 * (exit 1) naming why, as awaiting the run's own result did when tenantctl held a Temporal handle.
 */
export async function resultOfRun<R>(gateway: GatewayClient, path: string, pollMs = 500): Promise<R> {
  const report = waitReporter();
  const run = await pollUntil(async () => {
    const { run } = await gateway.get<{ run: RunView<R> | null }>(path);
    report(run?.waiting);
    return run && hasEnded(run) ? run : undefined;
  }, pollMs);
  if (run.status === 'COMPLETED') return run.result as R;
  throw new Error(`${run.workflowId} ended ${run.status}${run.failure ? `: ${endedWhy(run)}` : ''}`);
}
