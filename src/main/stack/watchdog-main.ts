import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { stopLeftovers } from '../../infra/stack-record.js';
import { WATCHDOG_LOG } from './watchdog.js';

/**
 * The watchdog process (see watchdog.ts): `watchdog-main <data dir> <stack pid> <stack start time>`, its stdin
 * a pipe from the stack. `bye` on it: a clean stop, end. The pipe closed without it: the stack died; once its
 * process has ended, stop what it recorded, then end.
 */
const [dataDir, pid, startTime] = process.argv.slice(2);
const log = (line: string) => {
  try {
    appendFileSync(join(dataDir!, WATCHDOG_LOG), `${new Date().toISOString()} ${line}\n`);
  } catch {
    // the data directory is gone (rm -rf .data): nothing to write to, and nothing recorded to act on
  }
};

// A terminal's signals are not for it (it has no terminal; the stack handles Ctrl-C); SIGTERM ends it.
for (const signal of ['SIGINT', 'SIGHUP'] as const) process.on(signal, () => undefined);

let input = '';
let acting = false;
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  input += chunk;
  if (input.includes('bye\n')) process.exit(0);
});
const stackGone = () => {
  if (acting) return;
  acting = true;
  void (async () => {
    try {
      const { ownerRunning, stopped } = await stopLeftovers(dataDir!, {
        say: log,
        owner: { pid: Number(pid), startTime: startTime!, waitMs: 30_000 },
      });
      if (ownerRunning) log(`the stack (pid ${ownerRunning.pid}) closed its pipe but still runs: nothing done`);
      else if (stopped.length === 0) log('the stack ended; nothing it recorded was left running');
    } catch (error) {
      log(`watchdog: ${error instanceof Error ? error.message : String(error)}`);
    }
    process.exit(0);
  })();
};
process.stdin.on('end', stackGone);
process.stdin.on('close', stackGone);
process.stdin.on('error', stackGone);
log(`watching the stack (pid ${pid}) on ${dataDir}`);
