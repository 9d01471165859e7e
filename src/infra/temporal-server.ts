import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { cacheRoot, findGo, goInstall, isExecutable, type Progress } from './go-install.js';
import { LauncherError, LauncherErrorCode } from './launcher-error.js';

/**
 * Finds or builds the Temporal server and its SQL schema tool from their Go module, the way the CLI
 * is built (temporal-cli.ts): cached outside the clone, one build at a time across processes. The
 * version is the one docker-compose.yml runs (temporalio/server and temporalio/admin-tools), so the
 * schemas applied here and there are the same files. v1.29.1 builds with `go install` on Go 1.26.
 */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
const MODULE = 'go.temporal.io/server';

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
  /** The module's `schema/` directory (postgresql/v12/{temporal,visibility}/versioned inside). */
  schemaDir: string;
}

export class TemporalServerBuildError extends LauncherError {
  override name = 'TemporalServerBuildError';
  constructor(message: string, detail?: string) {
    super(LauncherErrorCode.TEMPORAL_SERVER_BUILD, message, detail);
  }
}

export function cachedServerDir(env: Record<string, string | undefined> = process.env): string {
  return join(cacheRoot(env, homedir()), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

/**
 * TEMPORAL_SERVER_PATH / TEMPORAL_SQL_TOOL_PATH / TEMPORAL_SCHEMA_DIR when all are set; else the cache, built when
 * missing.
 */
export async function findOrBuildTemporalServer(
  options: { env?: Record<string, string | undefined>; onProgress?: Progress } = {},
): Promise<TemporalServerBinaries> {
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => undefined);
  const given = [env.TEMPORAL_SERVER_PATH, env.TEMPORAL_SQL_TOOL_PATH, env.TEMPORAL_SCHEMA_DIR];
  if (given.some(Boolean)) {
    const [server, sqlTool, schemaDir] = given;
    if (!server || !sqlTool || !schemaDir)
      throw new TemporalServerBuildError(
        'TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH and TEMPORAL_SCHEMA_DIR: set all three or none',
      );
    for (const [name, path] of [
      ['TEMPORAL_SERVER_PATH', server],
      ['TEMPORAL_SQL_TOOL_PATH', sqlTool],
    ] as const) {
      if (!isExecutable(path)) throw new TemporalServerBuildError(`${name}: ${path} is not an executable file`);
    }
    return { server, sqlTool, schemaDir };
  }
  const dir = cachedServerDir(env);
  const binaries = { server: join(dir, 'server'), sqlTool: join(dir, 'sql') };
  const go = findGo(env);
  if (!isExecutable(binaries.server) || !isExecutable(binaries.sqlTool)) {
    if (!go)
      throw new TemporalServerBuildError(
        `no Temporal server in ${dir} and no Go toolchain to build it: install Go, or set ` +
          `TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH and TEMPORAL_SCHEMA_DIR`,
      );
    await goInstall(go, {
      what: `the Temporal server v${TEMPORAL_SERVER_VERSION} and its SQL tool`,
      modules: [
        `${MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
        `${MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
      ],
      dir,
      binaries: ['server', 'sql'],
      expected: 'about 4 minutes once the CLI is built, 8 from nothing',
      env,
      progress,
      fail: (message, detail) => new TemporalServerBuildError(message, detail),
    });
  }
  return { ...binaries, schemaDir: moduleSchemaDir(go, env) };
}

/** The schemas come with the module the build downloaded: `$(go env GOMODCACHE)/go.temporal.io/server@vX/schema`. */
function moduleSchemaDir(go: string | undefined, env: Record<string, string | undefined>): string {
  if (!go)
    throw new TemporalServerBuildError(
      'the Go toolchain is needed to find the server schema files: install Go, or set ' +
        'TEMPORAL_SCHEMA_DIR with the other two',
    );
  const modCache = execFileSync(go, ['env', 'GOMODCACHE'], {
    env: { ...env, GOTOOLCHAIN: 'local' },
    encoding: 'utf8',
  }).trim();
  const dir = join(modCache, `${MODULE}@v${TEMPORAL_SERVER_VERSION}`, 'schema');
  if (!existsSync(join(dir, 'postgresql', 'v12'))) {
    // A cleaned module cache (go clean -modcache) keeps the binaries but loses the schemas: fetch the module again.
    execFileSync(go, ['mod', 'download', `${MODULE}@v${TEMPORAL_SERVER_VERSION}`], {
      env: { ...env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      stdio: 'ignore',
    });
  }
  if (!existsSync(join(dir, 'postgresql', 'v12')))
    throw new TemporalServerBuildError(
      `the Temporal server schemas are not in ${dir}: run \`go mod download ${MODULE}@v${TEMPORAL_SERVER_VERSION}\``,
    );
  return dir;
}
