import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';

/**
 * Makes the test files that share a fixed workflow id take turns: the integration files share one
 * namespace, and some runs have one id per namespace (the parent key rotation is `rotate-parent-key`).
 * Each file holds a Postgres advisory lock on the shared server from before its first hook to after
 * its last, so two such files never run that workflow at once while the rest of the suite runs on.
 * A run the file left running (a failed test, its worker gone) is terminated before the next file's
 * turn: otherwise that file would join it (one id) and wait for a worker that no longer exists.
 * Call at the top level of the file.
 */
export function takeTurns(workflowId: string): void {
  let holder: pg.Client | undefined;
  beforeAll(async () => {
    holder = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock(hashtext($1::text))', [`test-turn:${workflowId}`]);
    await terminateLeftover(workflowId);
  });
  afterAll(async () => {
    await terminateLeftover(workflowId);
    // Ending the session releases the lock.
    await holder?.end();
  });
}

async function terminateLeftover(workflowId: string): Promise<void> {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  try {
    const handle = new Client({ connection, namespace: inject('temporalNamespace') }).workflow.getHandle(workflowId);
    const running = await handle
      .describe()
      .then((run) => run.status.name === 'RUNNING')
      .catch(() => false);
    if (running) await handle.terminate('test file over: its workers are gone');
  } finally {
    await connection.close();
  }
}
