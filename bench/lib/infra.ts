import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { ensureDatabase } from '../../src/infra/database.js';
import { startEmbeddedPostgres } from '../../src/infra/embedded-postgres.js';
import { startHeadlessDevServer } from '../../src/infra/temporal-dev-server.js';
import type { Cleanup } from '../../src/infra/cleanup.js';
import { dropDatabase } from '../../test/harness/database.js';

/**
 * The infrastructure shared by every benchmark of a run, like the integration tests' global setup:
 * ONE headless in-memory Temporal dev server and ONE embedded Postgres in a temp directory, or the
 * ones named by TEMPORAL_ADDRESS / DATABASE_URL. Each benchmark takes a fresh migrated database.
 */
export interface BenchInfra {
  temporalAddress: string;
  namespace: string;
  /** Where each piece came from, for the JSON results. */
  sources: { temporal: string; postgres: 'embedded' | 'DATABASE_URL' };
  cleanup: Cleanup;
  /** A new, migrated database on the Postgres server, dropped at the end of the run. */
  freshDatabase(label: string): Promise<string>;
  /** The embedded Postgres loaded pg_stat_statements (BENCH_PG_STAT_STATEMENTS=1): statementStats can read it. */
  statementStats: boolean;
}

const STATEMENT_STATS_SETTINGS = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'all',
  'pg_stat_statements.track_planning': 'on',
};

export async function startBenchInfra(cleanup: Cleanup, log: (line: string) => void): Promise<BenchInfra> {
  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  let temporalSource = 'TEMPORAL_ADDRESS';
  if (!temporalAddress) {
    const server = await startHeadlessDevServer(cleanup, log, process.env.TEMPORAL_CLI_PATH);
    temporalAddress = server.address;
    temporalSource = `dev server (${server.source})`;
  }

  let adminUrl = process.env.DATABASE_URL;
  // Opt-in: tracking every statement (and its planning) costs Postgres CPU, which the CPU rows would count.
  const statementStats = !adminUrl && process.env.BENCH_PG_STAT_STATEMENTS === '1';
  if (!adminUrl) {
    // initdb runs as the postgres user when we are root: its temp parent must be traversable.
    const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-bench-pg-'));
    chmodSync(dir, 0o755);
    const server = await startEmbeddedPostgres({
      dataDir: join(dir, 'data'),
      persistent: false,
      ...(statementStats ? { settings: STATEMENT_STATS_SETTINGS } : {}),
    });
    cleanup.defer('embedded Postgres', async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    adminUrl = server.adminUrl;
  }
  const serverUrl = adminUrl;

  return {
    temporalAddress,
    namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    sources: { temporal: temporalSource, postgres: process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded' },
    cleanup,
    statementStats,
    async freshDatabase(label) {
      const name = `bench_${label.replace(/[^a-z0-9]/g, '_').slice(0, 30)}_${process.pid}`;
      await dropDatabase(serverUrl, name);
      const url = await ensureDatabase(serverUrl, name);
      cleanup.defer(`database ${name}`, () => dropDatabase(serverUrl, name));
      const pool = createPool(url, { max: 1 });
      await migrate(pool).finally(() => pool.end());
      return url;
    },
  };
}
