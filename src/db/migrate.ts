import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import { projectPath } from '../infra/project-root.js';

/**
 * Forward-only numbered SQL migrations (`migrations/0001_name.sql`), each in its own transaction,
 * serialised across processes by an advisory lock held for the whole run.
 */
const MIGRATIONS_DIR = projectPath('migrations');
const LOCK_KEY = 'tenant-orchestrator:migrate';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => {
      const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
      if (!match) throw new Error(`migration file ${file} must be named NNNN_lower_snake.sql`);
      return { version: Number(match[1]), name: match[2]!, sql: readFileSync(`${dir}/${file}`, 'utf8') };
    });
  // 1, 2, 3, … with no gap and no repeat: a database at version N has applied exactly 1..N, so a
  // file merged later with a lower number can never be skipped.
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1)
      throw new Error(`migration ${migration.version} is out of sequence (expected ${index + 1})`);
  });
  return migrations;
}

export function codeSchemaVersion(): number {
  return listMigrations().at(-1)?.version ?? 0;
}

async function ensureTable(client: pg.PoolClient | pg.Client) {
  await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
}

export interface MigrateResult {
  from: number;
  to: number;
  applied: string[];
}

export async function migrate(pool: pg.Pool, migrations = listMigrations()): Promise<MigrateResult> {
  const client = await pool.connect();
  // A connection ended by Postgres mid-migration fails the next statement instead of crashing us.
  let broken = false;
  client.on('error', () => (broken = true));
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1::text))', [LOCK_KEY]);
    try {
      await ensureTable(client);
      const { rows } = await client.query<{ version: number }>(
        'SELECT coalesce(max(version), 0)::int AS version FROM schema_migrations',
      );
      const from = rows[0]!.version;
      const applied: string[] = [];
      for (const migration of migrations.filter((m) => m.version > from)) {
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1::int, $2::text)', [
            migration.version,
            migration.name,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw new Error(`migration ${migration.version}_${migration.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        applied.push(`${String(migration.version).padStart(4, '0')}_${migration.name}`);
      }
      return { from, to: Math.max(from, migrations.at(-1)?.version ?? 0), applied };
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1::text))', [LOCK_KEY]);
    }
  } finally {
    client.release(broken);
  }
}

export class SchemaMismatchError extends Error {
  override name = 'SchemaMismatchError';
}

/** The worker refuses to start on a schema that is older (or newer) than its code. */
export async function assertSchemaCurrent(pool: pg.Pool): Promise<void> {
  const expected = codeSchemaVersion();
  // Planned separately: a query naming a missing table fails at planning time, even under CASE.
  const { rows: exists } = await pool.query<{ present: boolean }>(
    `SELECT to_regclass('schema_migrations') IS NOT NULL AS present`,
  );
  const { rows } = exists[0]?.present
    ? await pool.query<{ version: number }>('SELECT coalesce(max(version), 0)::int AS version FROM schema_migrations')
    : { rows: [{ version: 0 }] };
  const actual = rows[0]?.version ?? 0;
  if (actual < expected) {
    throw new SchemaMismatchError(
      `database schema is at version ${actual} but this code needs ${expected}: run \`npx tenantctl migrate\` first`,
    );
  }
  if (actual > expected) {
    throw new SchemaMismatchError(
      `database schema is at version ${actual}, newer than this code (${expected}): deploy the newer code`,
    );
  }
}
