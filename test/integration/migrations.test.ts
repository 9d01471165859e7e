import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  assertSchemaCurrent,
  codeSchemaVersion,
  listMigrations,
  migrate,
  SchemaMismatchError,
} from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { ensureDatabase } from '../../src/infra/database.js';
import { generateMasterKey } from '../../src/secrets/master-keys.js';
import { runCli } from '../harness/cli.js';
import { dropDatabase } from '../harness/database.js';

describe('migrations', () => {
  let pool: Pool;
  let databaseUrl: string;
  const name = `t_migrations_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    databaseUrl = await ensureDatabase(inject('postgresAdminUrl'), name);
    pool = createPool(databaseUrl, { max: 10 });
  });
  afterAll(async () => {
    await pool?.end();
    const admin = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('refuses to run on an empty database, saying what to run', async () => {
    const refusal = assertSchemaCurrent(pool);
    await expect(refusal).rejects.toBeInstanceOf(SchemaMismatchError);
    await expect(refusal).rejects.toThrow(/tenantctl migrate/);
  });

  it('applies every migration exactly once when five processes migrate at the same time', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => migrate(pool)));
    expect(results.flatMap((r) => r.applied)).toHaveLength(listMigrations().length);
    const { rows } = await pool.query('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(listMigrations().map((m) => m.version));
    // No gap: a database at version N has applied exactly 1..N.
    expect(rows.map((r) => r.version)).toEqual(Array.from({ length: codeSchemaVersion() }, (_, i) => i + 1));
    await expect(assertSchemaCurrent(pool)).resolves.toBeUndefined();
  });

  it('rolls a failing migration back whole and leaves the version where it was', async () => {
    const broken = [
      { version: codeSchemaVersion() + 1, name: 'broken', sql: 'CREATE TABLE half_done (x int); SELECT 1/0;' },
    ];
    await expect(
      migrate(pool, [
        ...Array(codeSchemaVersion())
          .fill(null)
          .map((_, i) => ({ version: i + 1, name: 'x', sql: '' })),
        ...broken,
      ]),
    ).rejects.toThrow(/broken failed/);
    const { rows } = await pool.query(
      `SELECT to_regclass('half_done') AS t, (SELECT max(version) FROM schema_migrations)::int AS v`,
    );
    expect(rows[0]).toEqual({ t: null, v: codeSchemaVersion() });
  });

  it('`tenantctl migrate` reports the schema version and is a no-op the second time', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: databaseUrl });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/schema already at version \d+/);
  });
});

describe('bad configuration on the command line', () => {
  it('gives one clear line per problem and a non-zero exit, never a stack trace', async () => {
    const result = await runCli(['migrate'], {
      DATABASE_URL: 'postgres//broken',
      LOG_LEVEL: 'loud',
      TEMPORAL_ADDRESS: 'x',
    });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.every((line) => line.startsWith('error: '))).toBe(true);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('names an unreachable TEMPORAL_ADDRESS in one line', async () => {
    // A database of its own: a worker writes at start (the parent key's first import), and the
    // template is cloned by every other test file.
    const own = `t_worker_cfg_${randomBytes(4).toString('hex')}`;
    const databaseUrl = await ensureDatabase(inject('postgresAdminUrl'), own);
    const ownPool = createPool(databaseUrl, { max: 1 });
    await migrate(ownPool);
    await ownPool.end();
    const result = await runCli(['worker'], {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      PLATFORM_BASE_URL: 'http://127.0.0.1:9/api/v1',
      PLATFORM_API_KEY: 'svpk_fake_for_config_test',
      SECRETS_KEYS: generateMasterKey('k1'),
    });
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toMatch(/^error: cannot reach Temporal at 127\.0\.0\.1:1: /);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    await dropDatabase(inject('postgresAdminUrl'), own);
  });

  it('lists every missing worker setting at once', async () => {
    const result = await runCli(['worker'], {});
    expect(result.code).toBe(2);
    expect(
      result.stderr
        .trim()
        .split('\n')
        .map((l) => l.split(':')[1]!.trim()),
      // PLATFORM_API_KEY is only a bootstrap now: the key may already be in our records (issue 18).
    ).toEqual(['DATABASE_URL', 'PLATFORM_BASE_URL', 'SECRETS_KEYS']);
  });

  it('names an unreachable database in one line', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db' });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^error: .*(ECONNREFUSED|connect)/);
  });
});
