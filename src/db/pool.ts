import pg from 'pg';
import { createHash } from 'node:crypto';

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

const preparedNames = new Map<string, string>();

/**
 * The query config of a named prepared statement: Postgres parses and plans `text` once per connection, then only
 * binds and executes it (a statement each onboarding sends was planned every time: 2.4 ms of Postgres CPU per
 * onboarding, docs/benchmarks.md). The name is a digest of the text, so one text always has one name and two texts
 * never share one. Only for texts built from code, never from data (every connection keeps each one it has seen).
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = preparedNames.get(text);
  if (name === undefined) {
    name = `tpo_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  return { name, text, values };
}
