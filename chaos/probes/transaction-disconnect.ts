/**
 * Reproduction of what the chaos run found: Postgres ends a connection (restart, failover,
 * pg_terminate_backend) while `withTransaction` holds it, and the process dies of an unhandled
 * 'error' event on the pg Client instead of the transaction failing and being retried.
 *
 *   node --import tsx chaos/probes/transaction-disconnect.ts <admin postgres url>
 *
 * Exits 0 ("survived") when the pool copes; a crash exits non-zero with pg's error.
 */
import pg from 'pg';
import { createPool, withTransaction } from '../../src/db/pool.js';

const adminUrl = process.argv[2];
if (!adminUrl) throw new Error('usage: transaction-disconnect.ts <admin postgres url>');
const applicationName = `chaos-probe-${process.pid}`;
const pool = createPool(adminUrl, { max: 2, applicationName });

let release!: () => void;
const held = new Promise<void>((resolve) => (release = resolve));
let backendPid!: number;
const started = new Promise<void>((resolve) => {
  // Like an activity between two statements of one transaction.
  void withTransaction(pool, async (client) => {
    backendPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    resolve();
    await held;
    await client.query('SELECT 1');
  }).catch((error: unknown) => console.log(`the transaction failed, as it should: ${(error as Error).message}`));
});
await started;

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query('SELECT pg_terminate_backend($1::int)', [backendPid]);
await admin.end();
await new Promise((resolve) => setTimeout(resolve, 500));
release();
await new Promise((resolve) => setTimeout(resolve, 200));

const { rows } = await pool.query<{ ok: number }>('SELECT 1 AS ok');
await pool.end();
console.log(rows[0]?.ok === 1 ? 'survived' : 'pool answered wrongly');
