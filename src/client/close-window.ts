import type { Client } from '@temporalio/client';
import { lifecycleWorkflowId } from '../domain/ids.js';
import { closeStatusQuery, type CloseStatus } from '../../workflows/close-tenant-messages.js';
import { queryOrNull } from './query-run.js';

/**
 * Waits until a delayed close has suspended the tenant and waits out its window (or has moved past
 * it: cancelled, closing, closed), polling the run's status query. A failed run fails here.
 */
export async function waitForCloseWindow(
  client: Client,
  externalRef: string,
  timeoutMs = 60_000,
): Promise<CloseStatus> {
  const handle = client.workflow.getHandle(lifecycleWorkflowId('close', externalRef));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const description = await handle.describe();
    if (description.status.name === 'FAILED' || description.status.name === 'TERMINATED') await handle.result();
    const status = await queryOrNull(handle, closeStatusQuery);
    if (status && status.stage !== 'closing') return status;
    if (Date.now() > deadline) throw new Error(`close:${externalRef} did not reach its window within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
