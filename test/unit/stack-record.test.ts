import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  isRunning,
  processIdentity,
  processStartedAtMs,
  psIdentity,
  type ProcessIdentity,
} from '../../src/infra/process-identity.js';
import { STACK_RECORD_FILE, StackRecord, stopLeftovers, type RecordedProcess } from '../../src/infra/stack-record.js';

/**
 * What a killed dev stack left on its data directory is stopped by what that stack recorded, each process
 * verified by its start time before any signal (src/infra/stack-record.ts), and the watchdog stops it as soon as
 * the stack dies (src/main/stack/watchdog.ts). Every process here is a `sleep` or a small Node script of the test's
 * own; whatever a failed test leaves is killed at the end.
 */
const started: ChildProcess[] = [];
const dirs: string[] = [];

function sleeper(): ChildProcess & { pid: number } {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  started.push(child);
  return child as ChildProcess & { pid: number };
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-record-'));
  dirs.push(dir);
  return dir;
}

const identity = (pid: number): ProcessIdentity => processIdentity(pid)!;

/** A record as a stack killed while it ran leaves it: the stack's own process (ended) first. */
function writeRecord(dir: string, processes: RecordedProcess[], extra: Record<string, unknown> = {}): void {
  writeFileSync(join(dir, STACK_RECORD_FILE), JSON.stringify({ version: 1, ...extra, processes }));
}

async function endedProcess(): Promise<RecordedProcess> {
  const child = spawn('true');
  const pid = child.pid!;
  const found = identity(pid) ?? { pid, startTime: '1', command: 'true' };
  await new Promise((resolve) => child.once('exit', resolve));
  return { role: 'stack', ...found };
}

const quiet = () => undefined;

afterEach(() => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('process identity', () => {
  it('names a process by pid, start time and command line, and not once it ended', async () => {
    const child = sleeper();
    const seen = identity(child.pid);
    expect(seen).toMatchObject({ pid: child.pid, command: 'sleep 300', startTime: expect.stringMatching(/^\d+$/) });
    expect(isRunning(seen)).toBe(true);
    // Another start time is another process, whatever its pid.
    expect(isRunning({ ...seen, startTime: String(Number(seen.startTime) + 1) })).toBe(false);
    expect(Math.abs(processStartedAtMs(child.pid)! - Date.now())).toBeLessThan(5_000);
    // Without /proc (macOS): ps, its start time to the second.
    expect(psIdentity(child.pid)).toMatchObject({ pid: child.pid, command: 'sleep 300' });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(processIdentity(child.pid)).toBeUndefined();
    expect(psIdentity(child.pid)).toBeUndefined();
    expect(isRunning(seen)).toBe(false);
  });
});

describe('stopLeftovers', () => {
  it('stops each process a killed stack recorded, with the signal its clean shutdown takes, and deletes the record', async () => {
    const dir = dataDir();
    const server = sleeper();
    const exited = new Promise((resolve) => server.once('exit', (_, signal) => resolve(signal)));
    writeRecord(dir, [await endedProcess(), { role: 'temporal', ...identity(server.pid) }]);
    const lines: string[] = [];
    const outcome = await stopLeftovers(dir, { say: (line) => lines.push(line) });
    expect(await exited).toBe('SIGTERM');
    expect(outcome.ownerRunning).toBeUndefined();
    expect(lines).toEqual([
      `stopped the Temporal dev server (pid ${server.pid}) left by a killed stack on this data directory`,
    ]);
    expect(existsSync(join(dir, STACK_RECORD_FILE))).toBe(false);
  });

  it('never signals a pid whose process is not the one recorded (another start time or command line)', async () => {
    const dir = dataDir();
    const other = sleeper();
    const seen = identity(other.pid);
    writeRecord(dir, [
      await endedProcess(),
      { role: 'temporal', ...seen, startTime: String(Number(seen.startTime) - 1) },
      { role: 'postgres', ...seen, command: 'postgres -D somewhere' },
    ]);
    expect(await stopLeftovers(dir, { say: quiet })).toEqual({ stopped: [] });
    expect(isRunning(seen)).toBe(true);
  });

  it('leaves everything alone while the stack that recorded it runs', async () => {
    const dir = dataDir();
    const stack = sleeper();
    const server = sleeper();
    writeRecord(dir, [
      { role: 'stack', ...identity(stack.pid) },
      { role: 'temporal', ...identity(server.pid) },
    ]);
    const outcome = await stopLeftovers(dir, { say: quiet });
    expect(outcome.ownerRunning?.pid).toBe(stack.pid);
    expect(isRunning(identity(server.pid))).toBe(true);
    expect(existsSync(join(dir, STACK_RECORD_FILE))).toBe(true);
  });

  it('ignores a record from another boot of the machine (start times count from boot)', async () => {
    const dir = dataDir();
    const server = sleeper();
    writeRecord(dir, [await endedProcess(), { role: 'temporal', ...identity(server.pid) }], { bootId: 'another' });
    await stopLeftovers(dir, { say: quiet });
    expect(isRunning(identity(server.pid))).toBe(true);
  });

  it("stops the postmaster its postmaster.pid names with SIGINT when that file's start time is the process's", async () => {
    const dir = dataDir();
    const postgresDir = join(dir, 'postgres');
    const postmaster = sleeper();
    const exited = new Promise((resolve) => postmaster.once('exit', (_, signal) => resolve(signal)));
    const startedAtS = Math.round(processStartedAtMs(postmaster.pid)! / 1000);
    const pidFile = (startS: number) =>
      writeFileSync(join(postgresDir, 'postmaster.pid'), `${postmaster.pid}\n${postgresDir}\n${startS}\n54329\n`);
    mkdirSync(postgresDir);
    // Killed before it recorded Postgres: only postmaster.pid names it. A start time a minute off is another process.
    writeRecord(dir, [await endedProcess()]);
    pidFile(startedAtS - 60);
    await stopLeftovers(dir, { say: quiet, postgresDirs: [postgresDir] });
    expect(isRunning(identity(postmaster.pid))).toBe(true);
    writeRecord(dir, [await endedProcess()]);
    pidFile(startedAtS);
    const lines: string[] = [];
    await stopLeftovers(dir, { say: (line) => lines.push(line), postgresDirs: [postgresDir] });
    expect(await exited).toBe('SIGINT');
    expect(lines).toEqual([`stopped Postgres (pid ${postmaster.pid}) left by a killed stack on this data directory`]);
    // No record (no stack of ours was there): a postmaster.pid alone is not enough to stop anything.
    const again = sleeper();
    writeFileSync(
      join(postgresDir, 'postmaster.pid'),
      `${again.pid}\n${postgresDir}\n${Math.round(processStartedAtMs(again.pid)! / 1000)}\n`,
    );
    await stopLeftovers(dir, { say: quiet, postgresDirs: [postgresDir] });
    expect(isRunning(identity(again.pid))).toBe(true);
  });
});

describe('StackRecord', () => {
  it('records this process and each one spawned; a clean stop deletes the record only once they ended', async () => {
    const dir = dataDir();
    const record = StackRecord.claim(dir);
    const child = sleeper();
    record.add('temporal', child.pid);
    const file = JSON.parse(readFileSync(join(dir, STACK_RECORD_FILE), 'utf8')) as { processes: RecordedProcess[] };
    expect(file.processes.map((p) => [p.role, p.pid])).toEqual([
      ['stack', process.pid],
      ['temporal', child.pid],
    ]);
    expect(file.processes[1]).toEqual({ role: 'temporal', ...identity(child.pid) });
    expect(record.release()).toBe(false);
    expect(existsSync(join(dir, STACK_RECORD_FILE))).toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(record.release()).toBe(true);
    expect(existsSync(join(dir, STACK_RECORD_FILE))).toBe(false);
  });
});

describe('the watchdog', () => {
  const owner = fileURLToPath(new URL('../harness/watchdog-owner.ts', import.meta.url));
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

  async function startOwner(dir: string): Promise<{ owner: ChildProcess; child: ProcessIdentity }> {
    const process = spawn(globalThis.process.execPath, ['--import', tsx, owner, dir], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    started.push(process);
    const pid = await new Promise<number>((resolve, reject) => {
      let out = '';
      process.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const ready = /ready (\d+)/.exec(out);
        if (ready) resolve(Number(ready[1]));
      });
      process.once('exit', (code) => reject(new Error(`the owner exited (${code}): ${out}`)));
    });
    return { owner: process, child: identity(pid) };
  }

  function recordedWatchdog(dir: string): ProcessIdentity {
    const { processes } = JSON.parse(readFileSync(join(dir, STACK_RECORD_FILE), 'utf8')) as {
      processes: RecordedProcess[];
    };
    return processes.find((p) => p.role === 'watchdog')!;
  }

  async function gone(target: ProcessIdentity, ms: number): Promise<boolean> {
    for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100)))
      if (!isRunning(target)) return true;
    return !isRunning(target);
  }

  it('stops what the stack recorded when the stack is killed with SIGKILL, then ends', async () => {
    const dir = dataDir();
    const { owner: stack, child } = await startOwner(dir);
    const watchdog = recordedWatchdog(dir);
    expect(isRunning(watchdog)).toBe(true);
    stack.kill('SIGKILL');
    expect(await gone(child, 15_000), 'the stack’s child still runs').toBe(true);
    expect(await gone(watchdog, 5_000), 'the watchdog still runs').toBe(true);
    expect(existsSync(join(dir, STACK_RECORD_FILE))).toBe(false);
    expect(readFileSync(join(dir, 'stack-watchdog.log'), 'utf8')).toContain(
      `stopped the Temporal dev server (pid ${child.pid}) left by a killed stack`,
    );
  }, 30_000);

  it('is dismissed by a clean stop, and ends without touching anything', async () => {
    const dir = dataDir();
    const { owner: stack, child } = await startOwner(dir);
    const watchdog = recordedWatchdog(dir);
    stack.stdin!.end('stop\n');
    await new Promise((resolve) => stack.once('exit', resolve));
    expect(await gone(watchdog, 5_000), 'the watchdog still runs').toBe(true);
    expect(isRunning(child)).toBe(false);
    expect(existsSync(join(dir, STACK_RECORD_FILE))).toBe(false);
    expect(readFileSync(join(dir, 'stack-watchdog.log'), 'utf8')).not.toContain('stopped');
  }, 30_000);
});
