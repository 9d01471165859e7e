import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { RecordedProcess } from '../../infra/stack-record.js';

/**
 * The dev stack's watchdog: a small Node process in a session of its own (a SIGKILL or a hangup sent to the
 * stack's process group does not reach it) holding the read end of a pipe from the stack. However the stack
 * ends, the kernel closes that pipe; the watchdog then waits for the stack's process to end and stops what the
 * stack recorded in DATA_DIR/stack-processes.json (src/infra/stack-record.ts), each verified by its start
 * time. A clean stop dismisses it first (`bye`). Neither Postgres nor the Temporal CLI can be told to end with
 * their parent (Node offers no parent-death signal), hence a process of our own that notices.
 * Its lines go to DATA_DIR/stack-watchdog.log.
 */
export const WATCHDOG_LOG = 'stack-watchdog.log';

export interface Watchdog {
  pid: number;
  /** A clean stop: the watchdog ends without touching anything. */
  dismiss(): void;
}

const self = fileURLToPath(import.meta.url);
// The same runtime as this module: its .ts source through tsx (npm start), or its compiled .js in dist/.
const MAIN = join(dirname(self), `watchdog-main${extname(self)}`);

export function startWatchdog(
  dataDir: string,
  owner: RecordedProcess,
  say: (line: string) => void,
): Watchdog | undefined {
  const runtime =
    extname(self) === '.ts' ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href] : [];
  const log = openSync(join(dataDir, WATCHDOG_LOG), 'a', 0o600);
  try {
    const child = spawn(process.execPath, [...runtime, MAIN, dataDir, String(owner.pid), owner.startTime], {
      stdio: ['pipe', log, log],
      detached: true,
      env: process.env,
    });
    if (child.pid === undefined) {
      say('no watchdog (it did not start): a stack killed hard leaves its processes to the next start');
      child.on('error', () => undefined);
      return undefined;
    }
    child.on('error', (error) => say(`watchdog: ${error.message}`));
    // The watchdog ends when the stack does, not the other way round; a write to a watchdog gone is no failure.
    child.stdin!.on('error', () => undefined);
    child.unref();
    return {
      pid: child.pid,
      dismiss: () => {
        if (!child.stdin!.destroyed) child.stdin!.end('bye\n');
      },
    };
  } finally {
    closeSync(log);
  }
}
