import type { GatewayClient } from '../api-client/gateway-client.js';
import type { LastRun, RunKind } from '../client/tenants/last-runs.js';
import type { TenantStatusView } from '../client/tenants/tenant-status.js';
import { segment } from './run.js';
import { completedResult, hasEnded, pollUntil, standingOf, waitReporter, type Standing } from './poll-run.js';

/**
 * `--wait` over the gateway: polls `GET /v1/tenants/:ref` (its `lastRuns` and `close`) until what the
 * command waits for is there. No Temporal handle: the gateway reads the run for us. `--timeout` and
 * the exit codes are poll-run.ts's, as for every wait.
 */
const POLL_MS = 250;

export async function pollTenant<T>(
  gateway: GatewayClient,
  externalRef: string,
  done: (view: TenantStatusView) => T | undefined,
  /** The kind of run waited for: its waits are reported as they start and end, and shown at a timeout. */
  kind?: RunKind,
): Promise<T> {
  const report = waitReporter();
  let standing: Standing[] = [];
  return pollUntil(
    async () => {
      const view = await gateway.get<TenantStatusView>(`/v1/tenants/${segment(externalRef, 'externalRef')}`);
      const run = kind ? view.lastRuns.find((r) => r.kind === kind) : undefined;
      if (kind) report(run?.waiting);
      standing = run ? [standingOf(run)] : [];
      return done(view);
    },
    POLL_MS,
    () => standing,
  );
}

/** The latest run of `kind` once it is no longer running. */
export function endedRun(view: TenantStatusView, kind: RunKind): LastRun | undefined {
  const run = view.lastRuns.find((r) => r.kind === kind);
  return hasEnded(run) ? run : undefined;
}

/** An ended run's result (exit 3 when it is a refusal); one that did not complete is `runFailedError`. */
export function lastRunResult<R>(what: string, run: LastRun): R {
  return completedResult<R>(run as LastRun & { result: R }, () => runFailedError(what, run));
}

/** A run that ended without completing, said as before: what failed, why, and the failure's type. */
function runFailedError(what: string, run: LastRun): Error {
  const failure = run.failure ?? { message: `the run ended ${run.status}`, type: null, causes: [] };
  return new Error(
    `${what} failed: ${[failure.message, ...failure.causes].join(': ')}${failure.type ? ` [${failure.type}]` : ''}`,
  );
}
