import pg from 'pg';

/** Anything that runs a query: the pool, or the client of a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;
export type Pool = pg.Pool;

// numeric(38,0) comes back as a string (pg's default); bigint (int8) ids as strings too. Money never
// becomes a JS number.
export function createPool(
  connectionString: string,
  options: { max?: number; applicationName?: string } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'tenant-orchestrator',
    connectionTimeoutMillis: 10_000,
  });
  // An idle client losing its connection (a Postgres restart) must not crash the process; the
  // next query gets a fresh connection.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Runs fn in one transaction on its own client: COMMIT on success, ROLLBACK on any error (which is
 * rethrown). The only way this code base opens a transaction.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no listener of the pool's: if Postgres ends its connection (restart,
  // failover) between two statements, its 'error' event would crash the process. Keep the error;
  // the next statement fails, the transaction is rolled back by Postgres, and the client is
  // destroyed on release instead of going back to the pool.
  let broken: Error | undefined;
  const onError = (error: Error) => (broken = error);
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (!broken) await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken ?? false);
  }
}
