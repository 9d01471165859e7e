import { homedir } from 'node:os';
import { join } from 'node:path';
import { cacheRoot, findGo, goInstall, isExecutable, onPath, type Progress } from './go-install.js';
import { LauncherError, LauncherErrorCode } from './launcher-error.js';

/**
 * Finds or builds the official Temporal CLI (which embeds the dev server). Order:
 * TEMPORAL_CLI_PATH, `temporal` on PATH, a cached build outside the clone, a build with the Go
 * toolchain. v1.5.1 is the newest tag `go install` can build (later tags use replace directives).
 * Returns undefined when none is possible; the caller then falls back to the SDK's own download.
 */
export const TEMPORAL_CLI_VERSION = '1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

export type { Progress };

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
  return join(cacheRoot(env, homedir()), `temporal-${TEMPORAL_CLI_VERSION}`);
}

export async function findOrBuildTemporalCli(options: FindCliOptions = {}): Promise<string | undefined> {
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => undefined);
  if (options.cliPath) {
    if (!isExecutable(options.cliPath)) {
      throw new TemporalCliError(
        `TEMPORAL_CLI_PATH: ${options.cliPath} is not an executable file: point it at a ` +
          `\`temporal\` binary or unset it`,
      );
    }
    return options.cliPath;
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return fromPath;
  const dir = cachedCliDir(env);
  const cached = join(dir, 'temporal');
  if (isExecutable(cached)) return cached;
  if (options.build === false) return undefined;
  const go = findGo(env);
  if (!go) return undefined;
  await goInstall(go, {
    what: `the Temporal CLI v${TEMPORAL_CLI_VERSION}`,
    modules: [MODULE],
    dir,
    binaries: ['temporal'],
    expected: 'about 5 minutes',
    env,
    progress,
    fail: (message, detail) =>
      new TemporalCliError(`${message}: put a \`temporal\` CLI on PATH or set TEMPORAL_CLI_PATH`, detail),
  });
  if (!isExecutable(cached)) throw new TemporalCliError(`go install finished but ${cached} is missing`);
  return cached;
}
