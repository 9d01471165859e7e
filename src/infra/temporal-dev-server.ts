import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../domain/search-attributes.js';
import { LauncherError, LauncherErrorCode, lastProblemLine } from './launcher-error.js';
import { findOrBuildTemporalCli, type Progress } from './temporal-cli.js';
import { preferredOrFreePort, freePort } from './ports.js';
import { DEFAULTS } from '../config/defaults.js';

/**
 * Starts `temporal server start-dev` ourselves (not through the SDK's fixed 5 s wait), with the
 * project's search attributes registered and the server version check off (no internet here).
 */
export interface DevServerOptions {
  cliPath?: string | undefined;
  env?: Record<string, string | undefined>;
  namespace?: string;
  port?: number;
  /** Web UI port; ignored when headless. */
  uiPort?: number;
  headless?: boolean;
  /** The Web UI decodes payloads through this codec endpoint (the gateway's /codec). */
  uiCodecEndpoint?: string;
  /** Keep workflows across restarts (the run command); tests use the in-memory store. */
  dbFilename?: string;
  readyTimeoutMs?: number;
  onProgress?: Progress;
  /** Called with the server's pid the moment it is spawned (the dev stack records it: stack-record.ts). */
  onSpawn?: (pid: number) => void;
  /**
   * Extra dynamic config, e.g. `history.timerProcessorMaxTimeShift: '10ms'` so millisecond timers fire in
   * milliseconds. Values keep their type (the server reads an int setting only from a number).
   */
  dynamicConfig?: Record<string, string | number | boolean>;
}

export interface RunningDevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  /** The origins a browser sees the Web UI under (both loopback spellings): the codec's CORS list. */
  uiOrigins?: string[];
  /** How it was obtained: a binary path, or 'sdk-download'. */
  source: string;
  stop(): Promise<void>;
}

export class DevServerError extends LauncherError {
  override name = 'DevServerError';
  constructor(message: string, detail?: string) {
    super(LauncherErrorCode.TEMPORAL_START_FAILED, message, detail);
  }
}

export async function startTemporalDevServer(options: DevServerOptions = {}): Promise<RunningDevServer> {
  const progress = options.onProgress ?? (() => undefined);
  const namespace = options.namespace ?? 'default';
  const binary = await findOrBuildTemporalCli({ cliPath: options.cliPath, env: options.env, onProgress: progress });
  if (!binary) return startWithSdkDownload(namespace, progress);

  const port = await preferredOrFreePort(options.port ?? DEFAULTS.TEMPORAL_DEV_PORT);
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--http-port',
    String(await freePort()),
    '--namespace',
    namespace,
    '--log-level',
    'error',
    '--dynamic-config-value',
    'frontend.enableServerVersionCheck=false',
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    ...Object.entries(options.dynamicConfig ?? {}).flatMap(([key, value]) => [
      '--dynamic-config-value',
      `${key}=${JSON.stringify(value)}`,
    ]),
  ];
  let uiUrl: string | undefined;
  let uiOrigins: string[] | undefined;
  if (options.headless ?? true) args.push('--headless');
  else {
    const uiPort = await preferredOrFreePort(options.uiPort ?? DEFAULTS.TEMPORAL_UI_PORT);
    args.push('--ui-port', String(uiPort), '--ui-ip', '127.0.0.1');
    uiUrl = `http://127.0.0.1:${uiPort}`;
    uiOrigins = [uiUrl, `http://localhost:${uiPort}`];
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  }
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);

  // Its own process group: a Ctrl-C reaches us, not the server, so the worker drains against a live
  // server before we stop it. The exit hook below still kills it if we exit first; a SIGKILL runs no hook
  // (the dev stack's watchdog and record, src/main/stack/watchdog.ts, cover that).
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (child.pid !== undefined) options.onSpawn?.(child.pid);
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(...chunk.toString().split('\n').filter(Boolean));
    output.splice(0, Math.max(0, output.length - 30));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  // A binary that cannot be run (EACCES, ENOENT) is reported by waitUntilReady, not as a crash.
  child.on('error', (error) => output.push(`error: ${error.message}`));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilReady(child, address, namespace, options.readyTimeoutMs ?? 60_000, output);
  } catch (error) {
    await stopChild(child);
    process.off('exit', killOnExit);
    throw error;
  }
  return {
    address,
    namespace,
    uiUrl,
    uiOrigins,
    source: binary,
    stop: async () => {
      await stopChild(child);
      process.off('exit', killOnExit);
    },
  };
}

async function waitUntilReady(
  child: ChildProcess,
  address: string,
  namespace: string,
  timeoutMs: number,
  output: string[],
) {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || (child.pid === undefined && output.length > 0)) {
      throw new DevServerError(
        `Temporal dev server (${child.spawnfile}) exited with code ${child.exitCode}: ` +
          `${lastProblemLine(output) ?? 'no output'} (TENANTCTL_DEBUG=1 shows its output)`,
        output.join('\n'),
      );
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new DevServerError(
    `Temporal dev server on ${address} was not ready within ${timeoutMs} ms (last ` +
      `error: ${lastError instanceof Error ? lastError.message : String(lastError)}): ` +
      `${lastProblemLine(output) ?? 'no output'} (TENANTCTL_DEBUG=1 shows its output)`,
    output.join('\n'),
  );
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Last resort for users with internet and neither Go nor a binary: the SDK downloads a dev server. */
async function startWithSdkDownload(namespace: string, progress: Progress): Promise<RunningDevServer> {
  progress('no Temporal CLI and no Go toolchain found: using the Temporal SDK download (needs internet)');
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      namespace,
      extraArgs: [
        '--dynamic-config-value',
        'frontend.enableServerVersionCheck=false',
        ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
      ],
    },
  });
  return {
    address: env.address,
    namespace,
    source: 'sdk-download',
    stop: () => env.teardown(),
  };
}

/**
 * A headless dev server on a free port for a bench or chaos run, stopped by `cleanup`. The CLI comes
 * from `cliPath` (TEMPORAL_CLI_PATH) when given, else it is found or built as for the dev stack.
 */
export async function startHeadlessDevServer(
  cleanup: { defer(label: string, stop: () => Promise<void>): void },
  log: (line: string) => void,
  cliPath: string | undefined,
): Promise<RunningDevServer> {
  const server = await startTemporalDevServer({
    headless: true,
    port: 0,
    cliPath,
    onProgress: log,
  });
  cleanup.defer('Temporal dev server', () => server.stop());
  return server;
}
