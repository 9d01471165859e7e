import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';

/**
 * Makes the test files that share a fixed workflow id take turns: the integration files share one
 * namespace, and some runs have one id per namespace (the parent key rotation is `rotate-parent-key`).
 * Each file holds a Postgres advisory lock on the shared server from before its first hook to after
 * its last, so two such files never run their workflows at once while the rest of the suite runs on.
 * Call at the top level of the file.
 */
export function takeTurns(resource: string): void {
  let holder: pg.Client | undefined;
  beforeAll(async () => {
    holder = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock(hashtext($1::text))', [`test-turn:${resource}`]);
  });
  afterAll(async () => {
    // Ending the session releases the lock.
    await holder?.end();
  });
}
