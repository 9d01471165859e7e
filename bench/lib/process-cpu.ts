import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time (user + system, ms) of this process's descendants, grouped by role — the worker and
 * simulator processes by label, the dev server and Postgres by command name — from /proc (Linux;
 * elsewhere an empty result). With the bench process's own process.cpuUsage() it gives the whole
 * CPU budget of a phase.
 */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  name: string;
  cpuMs: number;
}

function readStats(): ProcStat[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^[0-9]+$/.test(entry));
  } catch {
    return [];
  }
  const stats: ProcStat[] = [];
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // comm is in parentheses and may itself contain spaces or parentheses.
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      // utime + stime, and cutime + cstime: the CPU of its children that ended and were reaped (Postgres
      // backends of closed connections, in the postmaster's), which a before/after reading would miss.
      const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      stats.push({ pid: Number(pid), ppid: Number(fields[1]), name, cpuMs: (ticks * 1000) / TICKS_PER_SECOND });
    } catch {
      // The process ended while we listed.
    }
  }
  return stats;
}

/** Labels a child process (and its own children: tsx's esbuild, forks) in every later reading. */
const labels = new Map<number, string>();
export function labelProcess(pid: number, label: string): void {
  labels.set(pid, label);
}

/** Readable names of the unlabelled processes we start, by command name. */
const BY_COMMAND: Record<string, string> = { temporal: 'Temporal server', postgres: 'Postgres' };

export function descendantsCpuMs(root = process.pid): Record<string, number> {
  const stats = readStats();
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const totals: Record<string, number> = {};
  const visit = (pid: number, inherited: string | undefined) => {
    for (const child of children.get(pid) ?? []) {
      const label = labels.get(child.pid) ?? inherited ?? BY_COMMAND[child.name] ?? child.name;
      totals[label] = (totals[label] ?? 0) + child.cpuMs;
      visit(child.pid, labels.get(child.pid) ?? inherited);
    }
  };
  visit(root, undefined);
  return totals;
}

/** CPU per run of each descendant group between two descendantsCpuMs() readings. */
export function cpuPerRun(
  before: Record<string, number>,
  after: Record<string, number>,
  runs: number,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([name, ms]) => [name, Math.round(((ms - (before[name] ?? 0)) / runs) * 10) / 10] as const)
      .filter(([, ms]) => ms > 0),
  );
}
