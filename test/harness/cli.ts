import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const TENANTCTL = fileURLToPath(new URL('../../bin/tenantctl.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tenantctl` as a user would, in a clean environment plus `env` (no dev-stack defaults). */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
  /** Written to the command's stdin (then closed); absent: no stdin. */
  stdin?: string,
): Promise<CliResult> {
  return runProcess(process.execPath, [TENANTCTL, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      DATA_DIR: '/nonexistent-stack-dir',
      ...env,
    },
    timeoutMs,
    ...(stdin === undefined ? {} : { stdin }),
  });
}

/** Runs a program to its end with exactly `env`, collecting its output; killed after `timeoutMs`. */
export function runProcess(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; timeoutMs: number; stdin?: string },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (options.stdin !== undefined) child.stdin!.end(options.stdin);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running `tenantctl` process (e.g. the worker) that a test can kill like a crash would. */
export function spawnCli(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; output: () => string; ready: Promise<void> } {
  const child = spawn(process.execPath, [TENANTCTL, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      DATA_DIR: '/nonexistent-stack-dir',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('worker polling')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`tenantctl ${args.join(' ')} exited early (${code}): ${output}`)));
  });
  return { child, output: () => output, ready };
}
