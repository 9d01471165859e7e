import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { Connection } from '@temporalio/client';
import { LauncherError, LauncherErrorCode, lastProblemLine } from './launcher-error.js';

/**
 * One `temporal-server start` process (all four services) from the committed config template:
 * everything it needs is in `env` (TEMPORAL_DB_*, ports, ...), so a restart is the same command
 * again. Its output goes to a log file; the last lines explain a failed start.
 */
export interface ServerProcessOptions {
  binary: string;
  /** deploy/ of the repository: the server reads <root>/temporal/cluster.yaml. */
  root: string;
  env: Record<string, string>;
  address: string;
  logFile: string;
  readyTimeoutMs: number;
}

export class TemporalServerProcess {
  #child: ChildProcess | undefined;
  #output: string[] = [];
  readonly #killOnExit = () => this.#child?.kill('SIGKILL');

  constructor(private readonly options: ServerProcessOptions) {}

  get running(): boolean {
    return this.#child !== undefined;
  }

  async start(): Promise<void> {
    const { binary, root, env, logFile } = this.options;
    const log = createWriteStream(logFile, { flags: 'a' });
    // Its own process group: a Ctrl-C reaches us, and the workers drain against a live server first.
    const child = spawn(
      binary,
      ['--root', root, '--config', 'temporal', '--env', 'cluster', '--allow-no-auth', 'start'],
      {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    this.#child = child;
    this.#output = [];
    const keep = (chunk: Buffer) => {
      log.write(chunk);
      this.#output.push(...chunk.toString().split('\n').filter(Boolean));
      this.#output.splice(0, Math.max(0, this.#output.length - 40));
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.on('error', (error) => this.#output.push(`error: ${error.message}`));
    child.once('exit', () => {
      if (this.#child === child) this.#child = undefined;
      log.end();
    });
    process.once('exit', this.#killOnExit);
    try {
      await this.#waitUntilServing(child);
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** SIGTERM (the server drains its shards), SIGKILL after 15 s. */
  async stop(): Promise<void> {
    const child = this.#child;
    process.off('exit', this.#killOnExit);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  /** The frontend answers and the history service owns its shards (system namespace readable). */
  async #waitUntilServing(child: ChildProcess): Promise<void> {
    const { address, readyTimeoutMs, logFile } = this.options;
    const deadline = Date.now() + readyTimeoutMs;
    let lastError: unknown;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new LauncherError(
          LauncherErrorCode.TEMPORAL_START_FAILED,
          `Temporal server exited with ${child.exitCode ?? child.signalCode}: ` +
            `${lastProblemLine(this.#output) ?? 'no output'} (whole log in ${logFile})`,
          this.#output.join('\n'),
        );
      }
      try {
        const connection = await Connection.connect({ address, connectTimeout: 1_000 });
        try {
          await connection.workflowService.describeNamespace({ namespace: 'temporal-system' });
          return;
        } finally {
          await connection.close();
        }
      } catch (error) {
        lastError = error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    throw new LauncherError(
      LauncherErrorCode.TEMPORAL_START_FAILED,
      `Temporal server on ${address} was not ready within ${readyTimeoutMs} ms (last ` +
        `error: ${lastError instanceof Error ? lastError.message : String(lastError)}; ` +
        `log in ${logFile})`,
      this.#output.join('\n'),
    );
  }
}
