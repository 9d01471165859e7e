import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';
import { startDevStackProcess, type DevStackProcess } from '../harness/dev-stack-process.js';
import { seeProcess, stackChildren, stillRunning, waitGone, type SeenProcess } from '../harness/process-watch.js';

/**
 * `npm start` killed hard (SIGKILL to its process group: a `kill -9`, the OOM killer) runs none of its
 * shutdown. Its Temporal dev server and Postgres run in process groups of their own (so that Ctrl-C reaches the
 * stack first and the worker drains against live servers), so they used to outlive it on the data directory,
 * and the next `npm start` there failed on Postgres's lock file until someone cleaned up by hand. Here: a stack
 * killed with SIGKILL takes its children with it (its watchdog stops them), and when the watchdog is killed too,
 * the next start on the same data directory stops what the killed stack recorded, then comes up on the same
 * ports, with the same records, and works. Every process seen is named by pid and start time.
 */
const RECORD = 'stack-processes.json';

interface RecordedProcess {
  role: string;
  pid: number;
  startTime: string;
}

/** What the stack recorded of its processes in DATA_DIR/stack-processes.json (nothing when there is no file). */
function recorded(dataDir: string): SeenProcess[] {
  const file = join(dataDir, RECORD);
  if (!existsSync(file)) return [];
  const { processes } = JSON.parse(readFileSync(file, 'utf8')) as { processes: RecordedProcess[] };
  return processes.map(({ role, pid, startTime }) => ({ what: role, pid, startTicks: startTime }));
}

const names = (list: SeenProcess[]) => list.map(({ what, pid }) => `${what} ${pid}`);

describe('npm start after a hard kill', () => {
  let dataDir = '';
  let ports: DevStackProcess['ports'];
  let current: DevStackProcess | undefined;
  // Every process of every stack started here: whatever a failed run leaves is killed at the end.
  const seen: SeenProcess[] = [];

  afterAll(async () => {
    await current?.stop();
    for (const process of seen.filter(stillRunning)) {
      try {
        globalThis.process.kill(process.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
  });

  it('stops the children of a stack killed with SIGKILL; the next start on its data directory comes up and works', async () => {
    const first = await startDevStackProcess();
    current = first;
    ({ dataDir, ports } = first);
    const onboarded = await runCli(
      ['onboard', '--external-ref', 'acme', '--name', 'Acme Inc', '--funding', '5000000', '--wait'],
      first.cliEnv,
      180_000,
    );
    expect(onboarded.code, onboarded.stdout + onboarded.stderr).toBe(0);
    const children = stackChildren(dataDir);
    seen.push(...children);
    expect(children.map((c) => c.what).sort()).toEqual(['Postgres', 'Temporal dev server']);
    const record = recorded(dataDir);
    seen.push(...record);

    await first.kill();
    current = undefined;
    // Nothing was started since: the killed stack's own children must end, and soon.
    expect(names(await waitGone(children, 30_000)), 'still running after the stack was killed').toEqual([]);

    const second = await startDevStackProcess(600_000, { dataDir, ports });
    current = second;
    seen.push(...stackChildren(dataDir), ...recorded(dataDir));
    // The killed stack's ports were free again: the second start got the same ones.
    expect(second.output()).toContain(`Temporal:         127.0.0.1:${ports.TEMPORAL_DEV_PORT}`);
    expect(second.output()).toContain(`Gateway:          http://127.0.0.1:${ports.GATEWAY_PORT}`);
    const list = await runCli(['list'], second.cliEnv);
    expect(list.code, list.stdout + list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^acme\s+active\s+sub_\w+\s+Acme Inc$/m);
    // Every process the killed stack recorded (the stack itself, its watchdog, the dev server, Postgres) is gone.
    expect(record.map((r) => r.what).sort()).toEqual(['postgres', 'stack', 'temporal', 'watchdog']);
    expect(names(record.filter(stillRunning))).toEqual([]);
  });

  it('when its watchdog is killed too, the next start stops what the killed stack recorded, then starts', async () => {
    const second = current!;
    const record = recorded(dataDir);
    const children = stackChildren(dataDir);
    expect(children).toHaveLength(2);
    const watchdog = record.find((r) => r.what === 'watchdog')!;
    // The record names the watchdog by pid and start time, as the test sees it.
    expect(seeProcess('watchdog', watchdog.pid)?.startTicks).toBe(watchdog.startTicks);

    // The watchdog first (killed with the stack, it would have stopped them before this could look).
    process.kill(watchdog.pid, 'SIGKILL');
    expect(names(await waitGone([watchdog], 10_000))).toEqual([]);
    await second.kill();
    current = undefined;
    // Nothing stops the dev server and Postgres now but the next start.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(names(children.filter(stillRunning)).length, 'left running by the killed stack').toBe(2);

    const third = await startDevStackProcess(600_000, { dataDir, ports });
    current = third;
    const thirdRecord = recorded(dataDir);
    seen.push(...stackChildren(dataDir), ...thirdRecord);
    expect(names([...record, ...children].filter(stillRunning)), 'left running after the next start').toEqual([]);
    expect(third.output()).toMatch(/stopped the Temporal dev server \(pid \d+\) left by a killed stack/);
    expect(third.output()).toMatch(/stopped Postgres \(pid \d+\) left by a killed stack/);
    expect(third.output()).toContain(`Temporal:         127.0.0.1:${ports.TEMPORAL_DEV_PORT}`);
    const list = await runCli(['list'], third.cliEnv);
    expect(list.code, list.stdout + list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^acme\s+active\s+sub_\w+\s+Acme Inc$/m);

    // A second `npm start` on the data directory of a stack that runs is refused, and touches nothing of it.
    const refused = await startDevStackProcess(120_000, { dataDir }).then(
      (stack) => stack.stop({ keepDataDir: true }).then(() => 'it started'),
      (error: Error) => error.message,
    );
    const owner = thirdRecord.find((p) => p.what === 'stack')!;
    expect(refused).toContain(`error: a stack already runs on ${dataDir} (pid ${owner.pid})`);
    expect(names(thirdRecord.filter((p) => !stillRunning(p)))).toEqual([]);
    const listAgain = await runCli(['list'], third.cliEnv);
    expect(listAgain.code, listAgain.stdout + listAgain.stderr).toBe(0);

    // Ctrl-C: the stack stops all it recorded and leaves no record behind.
    const thirdChildren = stackChildren(dataDir);
    const recordFile = join(dataDir, RECORD);
    const stopped = third.stop({ keepDataDir: true });
    current = undefined;
    await stopped;
    expect(names([...thirdRecord, ...thirdChildren].filter(stillRunning))).toEqual([]);
    expect(existsSync(recordFile)).toBe(false);
  });
});
