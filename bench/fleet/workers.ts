import { Client, Connection } from '@temporalio/client';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createDataConverter } from '../../src/secrets/payload-codec.js';
import { readFileSync } from 'node:fs';
import { startTenantctl, type RunningTenantctl } from '../../src/infra/tenantctl-process.js';
import type { Cleanup } from '../../src/infra/cleanup.js';
import { labelProcess } from '../lib/process-cpu.js';

/**
 * The fleet benchmark's workers as production runs them: `tenantctl worker` processes (main queue and
 * the rate-limited platform queue in each, payload codec on) started with exactly the given
 * environment. Their RSS is read from /proc; their CPU is labelled `worker` in descendantsCpuMs().
 */
export interface FleetWorkers {
  processes: RunningTenantctl[];
  /** RSS of each worker process now, MB (NaN where unreadable). */
  rssMb(): number[];
  stop(): Promise<void>;
}

export async function startFleetWorkers(
  cleanup: Cleanup,
  count: number,
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<FleetWorkers> {
  const processes: RunningTenantctl[] = [];
  for (let i = 1; i <= count; i++) {
    const worker = await startTenantctl({
      name: `worker-${i}`,
      command: 'worker',
      env,
      readyLine: 'worker polling',
      readyTimeoutMs: 300_000,
      onLine: (name, line) => {
        if (/"level":"(warn|error|fatal)"|\b(WARN|ERROR)\b/.test(line)) log(`${name}: ${line.slice(0, 400)}`);
      },
    });
    labelProcess(worker.pid, 'worker');
    cleanup.defer(`fleet ${worker.name} (pid ${worker.pid})`, () => worker.stop());
    processes.push(worker);
  }
  return {
    processes,
    rssMb: () => processes.map((p) => rssMbOf(p.pid)),
    stop: async () => {
      for (const p of processes) await p.stop();
    },
  };
}

export function rssMbOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Peak and last RSS of each worker, sampled every `everyMs` until stopped. */
export function sampleWorkersRss(
  workers: FleetWorkers,
  everyMs = 250,
): { stop(): { peakMb: number[]; lastMb: number[] } } {
  const peak = workers.rssMb();
  const timer = setInterval(() => {
    workers.rssMb().forEach((mb, i) => {
      if (Number.isFinite(mb)) peak[i] = Number.isFinite(peak[i]!) ? Math.max(peak[i]!, mb) : mb;
    });
  }, everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      const last = workers.rssMb();
      last.forEach((mb, i) => {
        if (Number.isFinite(mb)) peak[i] = Math.max(peak[i]!, mb);
      });
      return { peakMb: peak, lastMb: last };
    },
  };
}

/** A Temporal client as the workers see payloads (their codec, their master keys), closed by `cleanup`. */
export async function benchClient(
  cleanup: Cleanup,
  label: string,
  target: { address: string; namespace: string; secretsKeys: string },
): Promise<Client> {
  const connection = await Connection.connect({ address: target.address });
  cleanup.defer(`${label} client connection`, () => connection.close());
  return new Client({
    connection,
    namespace: target.namespace,
    dataConverter: createDataConverter(parseMasterKeys(target.secretsKeys)),
  });
}
