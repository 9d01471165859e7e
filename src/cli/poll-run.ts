import type { GatewayClient } from '../client/gateway-client.js';
import type { RunView } from '../client/run-status.js';

/**
 * `--wait` for a run the gateway started: polls a status route answering `{ run: RunView | null }`
 * until the run has ended. A completed run gives its result; one that ended otherwise is an error
 * (exit 1) naming why, as awaiting the run's own result did when tenantctl held a Temporal handle.
 */
export async function resultOfRun<R>(gateway: GatewayClient, path: string, pollMs = 500): Promise<R> {
  for (;;) {
    const { run } = await gateway.get<{ run: RunView<R> | null }>(path);
    if (run && run.status !== 'RUNNING' && run.status !== 'CONTINUED_AS_NEW') {
      if (run.status === 'COMPLETED') return run.result as R;
      const failure = run.failure;
      throw new Error(
        `${run.workflowId} ended ${run.status}` +
          (failure
            ? `: ${failure.type ? `${failure.type}: ` : ''}${[failure.message, ...failure.causes].join(': ')}`
            : ''),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
