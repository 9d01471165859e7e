import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, openSync, closeSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { LauncherError, LauncherErrorCode, lastProblemLine } from './launcher-error.js';

/**
 * Finds or builds the official Temporal CLI (which embeds the dev server). Order:
 * TEMPORAL_CLI_PATH, `temporal` on PATH, a cached build outside the clone, a build with the Go
 * toolchain. v1.5.1 is the newest tag `go install` can build (later tags use replace directives).
 * Returns undefined when none is possible; the caller then falls back to the SDK's own download.
 */
export const TEMPORAL_CLI_VERSION = '1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

export type Progress = (line: string) => void;

export interface FindCliOptions {
  cliPath?: string | undefined;
  env?: Record<string, string | undefined>;
  onProgress?: Progress;
  /** false: only look, never build (used by `--no-build` style checks). */
  build?: boolean;
}

export class TemporalCliError extends LauncherError {
  override name = 'TemporalCliError';
  constructor(message: string, detail?: string) {
    super(LauncherErrorCode.TEMPORAL_CLI, message, detail);
  }
}

export function cachedCliDir(env: Record<string, string | undefined> = process.env): string {
  const cacheRoot = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  return join(cacheRoot, 'tenant-orchestrator', `temporal-${TEMPORAL_CLI_VERSION}`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, env: Record<string, string | undefined>): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

export async function findOrBuildTemporalCli(options: FindCliOptions = {}): Promise<string | undefined> {
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => undefined);
  if (options.cliPath) {
    if (!isExecutable(options.cliPath)) {
      throw new TemporalCliError(`TEMPORAL_CLI_PATH: ${options.cliPath} is not an executable file: point it at a \`temporal\` binary or unset it`);
    }
    return options.cliPath;
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return fromPath;
  const dir = cachedCliDir(env);
  const cached = join(dir, 'temporal');
  if (isExecutable(cached)) return cached;
  if (options.build === false) return undefined;
  const go = onPath('go', env) ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) return undefined;
  await buildWithGo(go, dir, env, progress);
  if (!isExecutable(cached)) throw new TemporalCliError(`go install finished but ${cached} is missing`);
  return cached;
}

/** One build at a time across processes: a lock file next to the cache; others wait for it. */
async function buildWithGo(go: string, dir: string, env: Record<string, string | undefined>, progress: Progress) {
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, '.build.lock');
  const binary = join(dir, 'temporal');
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx'));
      break;
    } catch {
      // A lock older than 30 minutes belongs to a build that died.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 30 * 60_000) rmSync(lock, { force: true });
      progress('another process is building the Temporal CLI; waiting for it');
      await new Promise((r) => setTimeout(r, 5_000));
      if (isExecutable(binary)) return;
    }
  }
  try {
    if (existsSync(binary)) return;
    progress(`building the Temporal CLI v${TEMPORAL_CLI_VERSION} with Go into ${dir} (first run only; about 5 minutes)`);
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(go, ['install', MODULE], {
        env: { ...env, GOTOOLCHAIN: 'local', GOBIN: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const tail: string[] = [];
      const ticker = setInterval(
        () => progress(`still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)}s)`),
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
        reject(new TemporalCliError(`could not run go (${error.message}): put a \`temporal\` CLI on PATH or set TEMPORAL_CLI_PATH`));
      });
      child.on('close', (code) => {
        clearInterval(ticker);
        if (code === 0) {
          progress(`built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)}s`);
          resolve();
        } else reject(new TemporalCliError(`go install ${MODULE} failed (exit ${code}: ${lastProblemLine(tail) ?? 'no output'}): put a \`temporal\` CLI on PATH or set TEMPORAL_CLI_PATH`, tail.join('\n')));
      });
    });
  } finally {
    rmSync(lock, { force: true });
  }
}
