import type { Pool } from '../../src/db/pool.js';

/** Counts statements sent through the pool (BEGIN and COMMIT included): each is a round trip. */
export function countStatements(pool: Pool): () => number {
  let count = 0;
  pool.on('connect', (client) => {
    // A Postgres stopping under a checked-out client (Ctrl-C reaches it too) fails that query; the
    // client's own 'error' event must not crash the run before cleanup.
    client.on('error', () => undefined);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      count += 1;
      return query(...args);
    }) as typeof client.query;
  });
  return () => count;
}
