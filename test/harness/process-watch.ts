import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a test sees of a dev stack's processes from outside, on Linux: a process is named by its pid AND its
 * start time (field 22 of /proc/<pid>/stat), so a pid the kernel has handed to a new process since is never
 * taken for the old one. A zombie (state Z or X: ended, not yet reaped) does not run.
 */
export interface SeenProcess {
  what: string;
  pid: number;
  startTicks: string;
}

function stat(pid: number): { state: string; startTicks: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, startTicks: fields[19]! };
  } catch {
    return undefined;
  }
}

export function seeProcess(what: string, pid: number): SeenProcess | undefined {
  const found = stat(pid);
  return found && !/^[ZX]/.test(found.state) ? { what, pid, startTicks: found.startTicks } : undefined;
}

/** True while that very process (same pid, same start time) runs. */
export function stillRunning(seen: SeenProcess): boolean {
  const found = stat(seen.pid);
  return found !== undefined && !/^[ZX]/.test(found.state) && found.startTicks === seen.startTicks;
}

/**
 * The Temporal dev server and the Postgres postmaster `npm start` runs on a data directory, as a test finds
 * them: the dev server by its `--db-filename DATA_DIR/temporal.db` argument, Postgres by the pid in its
 * DATA_DIR/postgres/postmaster.pid.
 */
export function stackChildren(dataDir: string): SeenProcess[] {
  const seen: SeenProcess[] = [];
  const dbFile = join(dataDir, 'temporal.db');
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const at = argv.indexOf('--db-filename');
    if (at >= 0 && argv[at + 1] === dbFile) {
      const process = seeProcess('Temporal dev server', Number(entry));
      if (process) seen.push(process);
    }
  }
  try {
    const pid = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const process = seeProcess('Postgres', pid);
    if (process) seen.push(process);
  } catch {
    // no postmaster.pid: no Postgres on that directory
  }
  return seen;
}

/** Waits until none of `seen` runs any more; returns those still running after `timeoutMs`. */
export async function waitGone(seen: SeenProcess[], timeoutMs: number): Promise<SeenProcess[]> {
  const deadline = Date.now() + timeoutMs;
  while (seen.some(stillRunning) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  return seen.filter(stillRunning);
}
