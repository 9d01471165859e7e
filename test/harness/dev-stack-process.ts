import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/infra/ports.js';

/**
 * The dev stack started exactly as a user starts it: `npm start` in the checkout, as a child process,
 * with its own DATA_DIR and non-default ports (so it never collides with a developer's own stack, and
 * so a port the code assumed would show). Only a few machine variables pass through: a developer's
 * DATABASE_URL or TEMPORAL_ADDRESS must not change what is tested.
 */
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PASSED_THROUGH = [
  'PATH',
  'HOME',
  'TMPDIR',
  'XDG_CACHE_HOME',
  'TEMPORAL_CLI_PATH',
  'GOPATH',
  'GOPROXY',
  'GOFLAGS',
  'GOTOOLCHAIN',
];
// The banner's last line: everything above it (addresses included) has been printed.
const UP_LINE = 'Ctrl-C stops everything.';

export interface DevStackProcess {
  /** The pid of `npm start`, also its process group's id. */
  pid: number;
  dataDir: string;
  /** The ports asked for (never the defaults). */
  ports: { TEMPORAL_UI_PORT: number; TEMPORAL_DEV_PORT: number; GATEWAY_PORT: number };
  /** The Web UI address `npm start` printed. */
  uiUrl: string;
  /** DATA_DIR/stack.json: the addresses the stack wrote for `tenantctl` in another terminal. */
  stackEnv: Record<string, string>;
  /** What `tenantctl` needs to find this stack: only DATA_DIR, as a user in the same checkout. */
  cliEnv: Record<string, string>;
  output(): string;
  /** Ctrl-C, as a terminal sends it; waits for the process group to end, then deletes the data directory. */
  stop(options?: { keepDataDir?: boolean }): Promise<void>;
  /**
   * SIGKILL to `npm start`'s process group (a `kill -9`, the OOM killer): nothing of it runs its shutdown.
   * Waits for the group to end and keeps the data directory, for a next start on it.
   */
  kill(): Promise<void>;
}

export interface DevStackProcessOptions {
  /** A data directory an earlier start used (default: a new one under the temp dir). */
  dataDir?: string;
  /** The ports an earlier start was given (default: free ones, never the defaults). */
  ports?: DevStackProcess['ports'];
  /** Settings given to `npm start` as a user exports them (PLATFORM_BASE_URL, DRIFT_POLICY, ...). */
  settings?: Record<string, string>;
}

export async function startDevStackProcess(
  readyTimeoutMs = 600_000,
  options: DevStackProcessOptions = {},
): Promise<DevStackProcess> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'tenant-orch-devstack-'));
  const ports = options.ports ?? {
    TEMPORAL_UI_PORT: await nonDefaultPort(8233),
    TEMPORAL_DEV_PORT: await nonDefaultPort(7233),
    GATEWAY_PORT: await nonDefaultPort(8080),
  };
  const env: Record<string, string> = {
    ...options.settings,
    DATA_DIR: dataDir,
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
  };
  for (const name of PASSED_THROUGH) if (process.env[name]) env[name] = process.env[name];

  // Its own process group, so stop() reaches npm, tsx and node alike (as Ctrl-C would).
  const child = spawn('npm', ['start', '--silent'], {
    cwd: REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const up = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(UP_LINE)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`npm start exited (${code}) before it was up:\n${output}`)));
  });
  // Ctrl-C: SIGINT to the whole group, as a terminal sends it (Postgres takes SIGTERM as a smart shutdown that
  // waits for its clients, SIGINT as a fast one that ends them); npm may exit before its children: wait for the group.
  const stop = async (stopOptions: { keepDataDir?: boolean } = {}) => {
    signalGroup(child.pid!, 'SIGINT');
    // Bounded: unreaped zombies (no init in a container) would keep the group "alive" forever.
    for (let waited = 0; groupAlive(child.pid!) && waited < 70_000; waited += 100) {
      if (waited === 60_000) signalGroup(child.pid!, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!stopOptions.keepDataDir) rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
  };
  const kill = async () => {
    signalGroup(child.pid!, 'SIGKILL');
    for (let waited = 0; groupAlive(child.pid!) && waited < 10_000; waited += 100)
      await new Promise((resolve) => setTimeout(resolve, 100));
  };

  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      up,
      new Promise(
        (_, reject) =>
          (timer = setTimeout(
            () => reject(new Error(`npm start was not up within ${readyTimeoutMs} ms:\n${output}`)),
            readyTimeoutMs,
          )),
      ),
    ]);
  } catch (error) {
    await stop({ keepDataDir: options.dataDir !== undefined });
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const uiUrl = /Temporal Web UI:\s+(\S+)/.exec(output)?.[1];
  if (!uiUrl) {
    await stop({ keepDataDir: options.dataDir !== undefined });
    throw new Error(`npm start printed no Web UI address:\n${output}`);
  }
  const stackEnv = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8')) as Record<string, string>;
  return {
    pid: child.pid!,
    dataDir,
    ports,
    uiUrl,
    stackEnv,
    cliEnv: { DATA_DIR: dataDir },
    output: () => output,
    stop,
    kill,
  };
}

async function nonDefaultPort(defaultPort: number): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port !== defaultPort) return port;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
