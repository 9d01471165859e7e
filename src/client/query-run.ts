import type { WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

/**
 * How long a read view waits for a run to answer a query. A query is answered by a worker: with none
 * polling the run's queue (workers stopped, or a run on another deployment's queue) Temporal holds it
 * until the caller's deadline, so without one `status` or `parent-key show` would hang.
 */
export const VIEW_QUERY_TIMEOUT_MS = 5_000;

/** A run's answer to a query for a view, or null when it cannot say in time (no worker, the run gone). */
export async function queryOrNull<Ret, Args extends unknown[]>(
  handle: WorkflowHandle,
  query: QueryDefinition<Ret, Args>,
  ...args: Args
): Promise<Ret | null> {
  const deadline = Date.now() + VIEW_QUERY_TIMEOUT_MS;
  return handle.client.connection.withDeadline(deadline, () => handle.query(query, ...args)).catch(() => null);
}

/** A run's answer to a query, told apart from no answer (no worker in time, the run gone): `answered: false`. */
export async function queryAnswer<Ret, Args extends unknown[]>(
  handle: WorkflowHandle,
  query: QueryDefinition<Ret, Args>,
  ...args: Args
): Promise<{ answered: true; value: Ret } | { answered: false }> {
  const deadline = Date.now() + VIEW_QUERY_TIMEOUT_MS;
  return handle.client.connection
    .withDeadline(deadline, () => handle.query(query, ...args))
    .then((value) => ({ answered: true as const, value }))
    .catch(() => ({ answered: false as const }));
}
