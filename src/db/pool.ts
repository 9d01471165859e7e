import pg from 'pg';

/** Anything that runs a query: the pool, or the client of a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;
export type Pool = pg.Pool;

// numeric(38,0) comes back as a string (pg's default); bigint (int8) ids as strings too. Money never
// becomes a JS number.
export function createPool(connectionString: string, options: { max?: number; applicationName?: string } = {}): pg.Pool {
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
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
