import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/**
 * A process named so that a reused pid is never taken for it: its pid AND its start time (on Linux field 22 of
 * /proc/<pid>/stat, clock ticks since boot; elsewhere `ps -o lstart`), with its command line. A pid the kernel
 * hands to a new process has another start time. A zombie (ended, not yet reaped by its parent) does not run.
 */
export interface ProcessIdentity {
  pid: number;
  startTime: string;
  command: string;
}

const hasProc = existsSync('/proc/self/stat');

/** The identity of the process with this pid now, or undefined when none runs (or it is a zombie). */
export function processIdentity(pid: number): ProcessIdentity | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return hasProc ? procIdentity(pid) : psIdentity(pid);
}

/** True while that very process (same pid, same start time, same command line) runs. */
export function isRunning(recorded: ProcessIdentity): boolean {
  const now = processIdentity(recorded.pid);
  return now !== undefined && now.startTime === recorded.startTime && now.command === recorded.command;
}

/**
 * This boot of the machine (Linux), so that a record from before a reboot names nothing that runs: start times
 * count from boot. Undefined where the system does not say.
 */
export function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** When the process started, in ms since the epoch (to compare with a time another program recorded). */
export function processStartedAtMs(pid: number): number | undefined {
  const identity = processIdentity(pid);
  if (!identity) return undefined;
  if (!hasProc) return Date.parse(identity.startTime) || undefined;
  const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1];
  return btime === undefined ? undefined : Number(btime) * 1000 + (Number(identity.startTime) * 1000) / clockTicks();
}

function procIdentity(pid: number): ProcessIdentity | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2, the command name, is in parentheses and may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [state, startTime] = [fields[0], fields[19]];
    if (!state || !startTime || /^[ZX]/.test(state)) return undefined;
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return { pid, startTime, command };
  } catch {
    return undefined;
  }
}

/** Without /proc (macOS): `ps`, in the C locale so the start time reads the same every time. */
export function psIdentity(pid: number): ProcessIdentity | undefined {
  const ps = (field: string) =>
    execFileSync('ps', ['-ww', '-p', String(pid), '-o', `${field}=`], {
      encoding: 'utf8',
      env: { ...process.env, LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  try {
    const state = ps('stat');
    if (!state || state.startsWith('Z')) return undefined;
    return { pid, startTime: ps('lstart').replace(/\s+/g, ' '), command: ps('command') };
  } catch {
    return undefined; // ps exits 1 when no such process runs
  }
}

let ticks: number | undefined;

function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100; // USER_HZ on every Linux architecture in use
    }
  }
  return ticks;
}
