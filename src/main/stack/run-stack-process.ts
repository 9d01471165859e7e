import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, type Config } from '../../config/index.js';
import { reportError } from '../report-error.js';
import { stackFile } from './stack-file.js';

export interface StackProcess {
  /** Every setting a second shell needs (secrets included), written to DATA_DIR/stack.json. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export interface StackProcessOptions<S extends StackProcess> {
  label: string;
  start(config: Config, say: (line: string) => void): Promise<S>;
  /** Printed once the stack is up; `file` is the stack.json path. */
  banner(stack: S, config: Config, file: string): void;
  /** Resolves with a reason when a part the stack cannot run without ends on its own. */
  ended(stack: S): Promise<string>;
}

/**
 * The process shell shared by `npm start` and `npm run cluster`: start the stack, write stack.json
 * readable by this user only, print the banner, and stop everything in reverse order on Ctrl-C,
 * on SIGTERM, on a hangup (its terminal closed), or when a part ends on its own (a half-running stack
 * hides the failure). A SIGKILL runs none of this (for `npm start`, its watchdog and record do: watchdog.ts).
 */
export async function runStackProcess<S extends StackProcess>(options: StackProcessOptions<S>): Promise<void> {
  const say = (line: string) => console.error(`[${options.label}] ${line}`);
  let stack: S | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping');
    await stack?.stop();
    rmSync(stackFile(loadConfig(process.env).DATA_DIR), { force: true });
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));
  try {
    const config = loadConfig(process.env);
    stack = await options.start(config, say);
    const file = stackFile(resolve(config.DATA_DIR));
    writeFileSync(file, JSON.stringify(stack.env, null, 2), { mode: 0o600 });
    chmodSync(file, 0o600); // also when the file existed with wider rights
    options.banner(stack, config, file);
    const reason = await options.ended(stack);
    if (!stopping) {
      say(reason);
      await shutdown(1);
    }
  } catch (error) {
    const code = reportError(error);
    await stack?.stop();
    process.exit(code);
  }
}
