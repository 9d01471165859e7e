import { existsSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LauncherError, LauncherErrorCode } from './launcher-error.js';
import { bootId, isRunning, processIdentity, processStartedAtMs, type ProcessIdentity } from './process-identity.js';

/**
 * What a stack on a data directory runs, as it recorded it: DATA_DIR/stack-processes.json holds the stack's own
 * process and each process it started (its watchdog, the Temporal dev server, Postgres), each by pid, start
 * time and command line, written the moment each was spawned. A stack killed hard (SIGKILL, the OOM killer)
 * runs no shutdown; its watchdog, or else the next start on the same data directory, stops what it recorded.
 * A process is signalled only while it is still the one recorded (same pid, start time and command line), so
 * a reused pid is never hit; nothing is ever recognised by a process name. A clean stop deletes the file.
 */
export const STACK_RECORD_FILE = 'stack-processes.json';

export type StackRole = 'stack' | 'watchdog' | 'temporal' | 'postgres';

export interface RecordedProcess extends ProcessIdentity {
  role: StackRole;
}

interface RecordFile {
  version: 1;
  bootId?: string;
  processes: RecordedProcess[];
}

const LABELS: Record<StackRole, string> = {
  stack: 'the stack',
  watchdog: "the stack's watchdog",
  temporal: 'the Temporal dev server',
  postgres: 'Postgres',
};

/**
 * How each is stopped: the signal its own clean shutdown answers, then harder ones (Postgres: SIGINT is its
 * fast shutdown, SIGQUIT its immediate one, which still ends its backends and removes postmaster.pid). The
 * stack itself is never stopped: one that runs is another stack, and is refused.
 */
const STEPS: Record<Exclude<StackRole, 'stack'>, Array<[NodeJS.Signals, number]>> = {
  watchdog: [
    ['SIGTERM', 5_000],
    ['SIGKILL', 5_000],
  ],
  temporal: [
    ['SIGTERM', 10_000],
    ['SIGKILL', 5_000],
  ],
  postgres: [
    ['SIGINT', 20_000],
    ['SIGQUIT', 5_000],
    ['SIGKILL', 5_000],
  ],
};

export class StackRecord {
  readonly #file: string;
  readonly #record: RecordFile;

  private constructor(dataDir: string, record: RecordFile) {
    this.#file = join(dataDir, STACK_RECORD_FILE);
    this.#record = record;
  }

  /** Records this process as the stack on `dataDir` (after `stopLeftovers` found none running there). */
  static claim(dataDir: string): StackRecord {
    const self = processIdentity(process.pid);
    if (!self) throw new Error(`cannot read this process's own start time (pid ${process.pid})`);
    const id = bootId();
    const record = new StackRecord(dataDir, {
      version: 1,
      ...(id ? { bootId: id } : {}),
      processes: [{ role: 'stack', ...self }],
    });
    record.#write();
    return record;
  }

  get owner(): RecordedProcess {
    return this.#record.processes[0]!;
  }

  /** Records a process just spawned (call it right after spawn: its start time is read now). */
  add(role: StackRole, pid: number): void {
    const identity = processIdentity(pid);
    if (!identity) return; // ended already: nothing to stop later
    this.#record.processes.push({ role, ...identity });
    this.#write();
  }

  /** The processes the stack started that still run (its watchdog aside). */
  running(): RecordedProcess[] {
    return this.#record.processes.filter((p) => p.role !== 'stack' && p.role !== 'watchdog' && isRunning(p));
  }

  /**
   * At a clean stop, once the stack stopped what it started: deletes the record and answers true; false (the
   * record kept, for the watchdog or the next start) while one of them still runs.
   */
  release(): boolean {
    if (this.running().length > 0) return false;
    if (sameOwner(readRecord(this.#file), this.owner)) rmSync(this.#file, { force: true });
    return true;
  }

  #write(): void {
    const temporary = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(this.#record, null, 2)}\n`, { mode: 0o600 });
    renameSync(temporary, this.#file);
  }
}

export interface StopLeftoversOptions {
  say: (line: string) => void;
  /**
   * Postgres data directories of the stack: a postmaster its postmaster.pid names, whose start time is the one
   * that file records, is stopped too (it was spawned, but the stack was killed before it recorded it).
   */
  postgresDirs?: readonly string[];
  /**
   * The watchdog: act only on the record of this stack (its pid and start time), once it has ended (waiting this long).
   */
  owner?: { pid: number; startTime: string; waitMs: number };
}

export interface LeftoversOutcome {
  /** The stack that recorded the file still runs: nothing was touched. */
  ownerRunning?: RecordedProcess;
  /** What was stopped, one line each (for the console). */
  stopped: string[];
}

/**
 * Stops what a killed stack recorded on `dataDir` and deletes its record. A stack that still runs there is left
 * alone (`ownerRunning`); a process that will not stop is a LauncherError (LEFTOVER_PROCESS).
 */
export async function stopLeftovers(dataDir: string, options: StopLeftoversOptions): Promise<LeftoversOutcome> {
  const file = join(dataDir, STACK_RECORD_FILE);
  const record = readRecord(file);
  if (!record) return { stopped: [] };
  const { owner: expected } = options;
  const owner = record.processes[0];
  if (expected && (owner?.pid !== expected.pid || owner.startTime !== expected.startTime)) return { stopped: [] };
  // Start times count from boot: after a reboot nothing recorded can run.
  const thisBoot = bootId();
  const processes = record.bootId && thisBoot && record.bootId !== thisBoot ? [] : record.processes;
  if (owner && processes.length > 0) {
    if (expected) await waitEnded(owner, expected.waitMs);
    if (isRunning(owner)) return { ownerRunning: owner, stopped: [] };
  }
  const targets = processes.filter((p) => p.role !== 'stack' && p.pid !== process.pid && isRunning(p));
  if (processes.length > 0)
    for (const dir of options.postgresDirs ?? []) {
      const postmaster = recordedPostmaster(dir);
      if (postmaster && !targets.some((t) => t.pid === postmaster.pid)) targets.push(postmaster);
    }
  const stopped: string[] = [];
  const failed: string[] = [];
  // The killed stack's watchdog first (it may be stopping the same processes, and must not outlive this call),
  // then the others side by side.
  for (const group of [targets.filter((t) => t.role === 'watchdog'), targets.filter((t) => t.role !== 'watchdog')]) {
    await Promise.all(
      group.map(async (target) => {
        const { ended, harder } = await stopProcess(target);
        const name = `${LABELS[target.role]} (pid ${target.pid})`;
        if (!ended) failed.push(name);
        else
          stopped.push(
            `stopped ${name} left by a killed stack on this data directory${harder ? ` (on ${harder})` : ''}`,
          );
      }),
    );
  }
  for (const line of stopped) options.say(line);
  if (failed.length > 0)
    throw new LauncherError(
      LauncherErrorCode.LEFTOVER_PROCESS,
      `${failed.join(', ')}, left by a killed stack on ${dataDir}, did not stop even on SIGKILL: ` +
        `end ${failed.length > 1 ? 'them' : 'it'} yourself, then start again`,
    );
  if (sameOwner(readRecord(file), owner)) rmSync(file, { force: true });
  return { stopped };
}

/**
 * Signals `target`, verified before every signal, until it ends; `harder`: the signal that ended it when its
 * clean shutdown's did not.
 */
async function stopProcess(target: RecordedProcess): Promise<{ ended: boolean; harder?: NodeJS.Signals }> {
  const steps = STEPS[target.role === 'stack' ? 'temporal' : target.role];
  for (const [index, [signal, waitMs]] of steps.entries()) {
    if (!isRunning(target)) return { ended: true };
    try {
      process.kill(target.pid, signal);
    } catch (error) {
      return { ended: (error as NodeJS.ErrnoException).code === 'ESRCH' };
    }
    if (await waitEnded(target, waitMs)) return index === 0 ? { ended: true } : { ended: true, harder: signal };
  }
  return { ended: !isRunning(target) };
}

async function waitEnded(target: ProcessIdentity, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isRunning(target)) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/**
 * The postmaster `dir`/postmaster.pid names, when that file says it runs on `dir` and the process with that pid
 * started when the file says the postmaster did (a pid reused since started later).
 */
function recordedPostmaster(dir: string): RecordedProcess | undefined {
  let lines: string[];
  try {
    lines = readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const startedAtS = Number(lines[2]);
  const identity = processIdentity(pid);
  const startedAtMs = processStartedAtMs(pid);
  if (!identity || startedAtMs === undefined || !Number.isFinite(startedAtS)) return undefined;
  if (Math.abs(startedAtMs / 1000 - startedAtS) > 5) return undefined;
  try {
    if (realpathSync(lines[1] ?? '') !== realpathSync(dir)) return undefined;
  } catch {
    return undefined;
  }
  return { role: 'postgres', ...identity };
}

function readRecord(file: string): RecordFile | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as RecordFile;
    return parsed.version === 1 && Array.isArray(parsed.processes) ? parsed : undefined;
  } catch {
    // Not one of ours (a stack writes it whole, by rename, so a kill never leaves half of one): nothing to go by.
    return undefined;
  }
}

function sameOwner(record: RecordFile | undefined, owner: ProcessIdentity | undefined): boolean {
  const first = record?.processes[0];
  return (
    first !== undefined &&
    owner !== undefined &&
    first.pid === owner.pid &&
    first.startTime === owner.startTime &&
    first.command === owner.command
  );
}
