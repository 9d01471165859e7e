import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from './embedded-postgres.js';

export interface ResolvedDatabase {
  url: string;
  /** 'external' (DATABASE_URL) or 'embedded'. */
  source: 'external' | 'embedded';
  stop(): Promise<void>;
}

/** Creates the database on the server of adminUrl when it does not exist yet. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`database name ${name} must be lower_snake_case`);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1::text', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Where the embedded Postgres of a data directory keeps its data (its postmaster.pid included). */
export function embeddedPostgresDir(dataDir: string): string {
  return join(dataDir, 'postgres');
}

/** DATABASE_URL when set; otherwise a persistent embedded Postgres under DATA_DIR/postgres. */
export async function resolveDatabase(
  config: { DATABASE_URL?: string | undefined; DATA_DIR: string },
  onLog?: (line: string) => void,
  /** The embedded postmaster's pid, the moment it is spawned. */
  onSpawn?: (pid: number) => void,
): Promise<ResolvedDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, source: 'external', stop: async () => undefined };
  const server = await startEmbeddedPostgres({
    dataDir: embeddedPostgresDir(config.DATA_DIR),
    persistent: true,
    port: 54329,
    ...(onLog ? { onLog } : {}),
    ...(onSpawn ? { onSpawn } : {}),
  });
  const url = await ensureDatabase(server.adminUrl, 'tenant_orchestrator');
  return { url, source: 'embedded', stop: () => server.stop() };
}
