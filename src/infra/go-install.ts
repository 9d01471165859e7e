import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { lastProblemLine } from './launcher-error.js';

/**
 * `go install` of Go programs into a cache directory outside the clone, one build at a time across
 * processes (a lock file next to the cache; others wait for it and then use its result). Shared by
 * the Temporal CLI (dev server) and the Temporal server with its SQL tool (`npm run cluster`).
 */
export type Progress = (line: string) => void;

export interface GoInstallRequest {
  /** What is built, for progress lines ("the Temporal CLI v1.5.1"). */
  what: string;
  /** `module/path/cmd/x@vX.Y.Z` entries, built by one `go install`. */
  modules: string[];
  /** Into this directory (GOBIN). */
  dir: string;
  /** Names of the binaries the build must leave in `dir`. */
  binaries: string[];
  /** How long a first build takes here, for the progress line. */
  expected: string;
  env: Record<string, string | undefined>;
  progress: Progress;
  /** Builds the launcher's own error from a one-line message and the build's output. */
  fail(message: string, detail?: string): Error;
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function onPath(name: string, env: Record<string, string | undefined>): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The Go toolchain: `go` on PATH or the usual /usr/local/go. */
export function findGo(env: Record<string, string | undefined>): string | undefined {
  return onPath('go', env) ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

export function cacheRoot(env: Record<string, string | undefined>, home: string): string {
  return join(env.XDG_CACHE_HOME || join(env.HOME || home, '.cache'), 'tenant-orchestrator');
}

const built = (request: GoInstallRequest) => request.binaries.every((name) => isExecutable(join(request.dir, name)));

export async function goInstall(go: string, request: GoInstallRequest): Promise<void> {
  const { dir, progress } = request;
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, '.build.lock');
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx'));
      break;
    } catch {
      // A lock older than 30 minutes belongs to a build that died.
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - since > 30 * 60_000) rmSync(lock, { force: true });
      progress(`another process is building ${request.what}; waiting for it`);
      await new Promise((r) => setTimeout(r, 5_000));
      if (built(request)) return;
    }
  }
  try {
    if (request.binaries.every((name) => existsSync(join(dir, name)))) return;
    progress(`building ${request.what} with Go into ${dir} (first run only; ${request.expected})`);
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(go, ['install', ...request.modules], {
        env: { ...request.env, GOTOOLCHAIN: 'local', GOBIN: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const tail: string[] = [];
      const ticker = setInterval(
        () => progress(`still building ${request.what} (${Math.round((Date.now() - started) / 1000)}s)`),
        20_000,
      );
      const collect = (chunk: Buffer) => {
        for (const line of chunk.toString().split('\n').filter(Boolean)) {
          tail.push(line);
          if (tail.length > 20) tail.shift();
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', (error) => {
        clearInterval(ticker);
        reject(request.fail(`could not run go (${error.message})`));
      });
      child.on('close', (code) => {
        clearInterval(ticker);
        if (code === 0) {
          progress(`built ${request.what} in ${Math.round((Date.now() - started) / 1000)}s`);
          resolve();
        } else
          reject(
            request.fail(
              `go install ${request.modules.join(' ')} failed (exit ${code}: ${lastProblemLine(tail) ?? 'no output'})`,
              tail.join('\n'),
            ),
          );
      });
    });
  } finally {
    rmSync(lock, { force: true });
  }
}
