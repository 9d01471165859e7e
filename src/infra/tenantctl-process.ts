import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LauncherError, LauncherErrorCode } from './launcher-error.js';
import { workerNodeFlags } from './worker-node-flags.js';

const TENANTCTL = fileURLToPath(new URL('../../bin/tenantctl.js', import.meta.url));

/**
 * A long-running `tenantctl <command>` (worker, gateway) as its own process, as production runs
 * it: started with exactly the given environment (a worker with its Node flags, worker-node-flags.ts, unless
 * that environment's NODE_OPTIONS sizes the semi-space itself), ready when it prints its ready line, stopped
 * with SIGTERM (it drains) and SIGKILL after 20 s. Its lines are passed on with its name.
 */
export interface TenantctlProcessOptions {
  name: string;
  command: 'worker' | 'gateway';
  env: Record<string, string>;
  /** A line the process prints once it serves ("worker polling", "gateway listening on"). */
  readyLine: string;
  onLine?: (name: string, line: string) => void;
  readyTimeoutMs?: number;
}

export interface RunningTenantctl {
  name: string;
  pid: number;
  /** Resolves with the exit code (or signal) when the process ends, whoever ended it. */
  exited: Promise<number | string>;
  /** The ready line as printed (it names the URL a gateway listens on). */
  readyText: string;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

export async function startTenantctl(options: TenantctlProcessOptions): Promise<RunningTenantctl> {
  const nodeFlags = options.command === 'worker' ? workerNodeFlags(options.env.NODE_OPTIONS) : [];
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, TENANTCTL, options.command], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onLine = options.onLine ?? (() => undefined);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'killed')),
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let tail = '';
  const readyText = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          fail(
            `${options.name} did not print "${options.readyLine}" within ` +
              `${(options.readyTimeoutMs ?? 120_000) / 1000} s`,
            tail,
          ),
        ),
      options.readyTimeoutMs ?? 120_000,
    );
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        onLine(options.name, line);
        tail = `${tail}${line}\n`.slice(-4000);
        if (line.includes(options.readyLine)) {
          clearTimeout(timer);
          resolve(line);
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(fail(`${options.name} exited (${code}) before it was ready`, tail));
    });
  }).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    await exited;
    process.off('exit', killOnExit);
    throw error;
  });
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) {
      const force = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.kill(signal);
      await exited;
      clearTimeout(force);
    }
    process.off('exit', killOnExit);
  };
  return {
    name: options.name,
    pid: child.pid!,
    exited,
    readyText,
    stop: () => end('SIGTERM'),
    kill: () => end('SIGKILL'),
  };
}

function fail(message: string, tail: string): LauncherError {
  const last = tail.trim().split('\n').at(-1);
  return new LauncherError(LauncherErrorCode.PROCESS_START_FAILED, last ? `${message}: ${last}` : message, tail);
}
