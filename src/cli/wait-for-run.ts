import type { GatewayClient } from '../client/gateway-client.js';
import type { LastRun, RunKind } from '../client/last-runs.js';
import type { TenantStatusView } from '../client/tenant-status.js';
import { segment } from './run.js';
import { hasEnded, pollUntil, waitReporter } from './poll-run.js';

/**
 * `--wait` over the gateway: polls `GET /v1/tenants/:ref` (its `lastRuns` and `close`) until what the
 * command waits for is there. No Temporal handle: the gateway reads the run for us.
 */
const POLL_MS = 250;

export async function pollTenant<T>(
  gateway: GatewayClient,
  externalRef: string,
  done: (view: TenantStatusView) => T | undefined,
  /** The kind of run waited for: its waits are reported as they start and end. */
  kind?: RunKind,
): Promise<T> {
  const report = waitReporter();
  return pollUntil(async () => {
    const view = await gateway.get<TenantStatusView>(`/v1/tenants/${segment(externalRef, 'externalRef')}`);
    if (kind) report(view.lastRuns.find((r) => r.kind === kind)?.waiting);
    return done(view);
  }, POLL_MS);
}

/** The latest run of `kind` once it is no longer running. */
export function endedRun(view: TenantStatusView, kind: RunKind): LastRun | undefined {
  const run = view.lastRuns.find((r) => r.kind === kind);
  return hasEnded(run) ? run : undefined;
}

/** A run that ended without completing, said as before: what failed, why, and the failure's type. */
export function runFailedError(what: string, run: LastRun): Error {
  const failure = run.failure ?? { message: `the run ended ${run.status}`, type: null, causes: [] };
  return new Error(
    `${what} failed: ${[failure.message, ...failure.causes].join(': ')}${failure.type ? ` [${failure.type}]` : ''}`,
  );
}
