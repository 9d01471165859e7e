import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/infra/embedded-postgres.js';
import { isPortFree } from '../src/infra/ports.js';

/**
 * An embedded Postgres in a temp directory this run owns, so it can be stopped and started again on
 * the same data and the same port while the worker keeps its DATABASE_URL — a database restart as
 * production sees one. (A DATABASE_URL server is not ours to restart, so chaos always starts its own.)
 */
export interface RestartablePostgres {
  adminUrl: string;
  port: number;
  restart(downMs: number): Promise<void>;
  /** Ends every backend of one application (a failover or a proxy restart as the worker sees it); returns how many. */
  terminateConnections(applicationName: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startRestartablePostgres(log: (line: string) => void): Promise<RestartablePostgres> {
  // initdb runs as the postgres user when we are root: its temp parent must be traversable.
  const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-chaos-pg-'));
  chmodSync(dir, 0o755);
  const dataDir = join(dir, 'data');
  let server: RunningPostgres | undefined = await startEmbeddedPostgres({ dataDir, persistent: true });
  const { port, adminUrl } = server;
  return {
    adminUrl,
    port,
    async restart(downMs) {
      await server?.stop();
      server = undefined;
      log(`Postgres stopped; starting it again in ${downMs} ms on port ${port}`);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      // The same port or nothing: another port would silently point the worker at no database.
      for (let tries = 0; !(await isPortFree(port)); tries++) {
        if (tries > 50) throw new Error(`port ${port} of the restarted Postgres stayed taken`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      server = await startEmbeddedPostgres({ dataDir, persistent: true, port });
      if (server.port !== port) throw new Error(`Postgres came back on port ${server.port}, not ${port}`);
      log('Postgres is back');
    },
    async terminateConnections(applicationName) {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ ended: boolean }>(
          'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1::text',
          [applicationName],
        );
        return rows.filter((r) => r.ended).length;
      } finally {
        await client.end();
      }
    },
    async stop() {
      await server?.stop();
      server = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
