import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { distEntry, distState } from '../../bin/dist-fresh.js';
import { summarize, type LatencySummary } from '../lib/stats.js';

/**
 * `tenantctl` as an operator runs it, timed from spawn to exit against the bench's running stack
 * (its Temporal server and database): `--help`, and `status <ref>` of a finished onboarding. Which
 * code ran is reported too: the CLI bundle or the compiled dist/ when fresh, else the sources through tsx.
 */
const TENANTCTL = fileURLToPath(new URL('../../bin/tenantctl.js', import.meta.url));

export interface CliTimings {
  runs: number;
  code: string;
  help: LatencySummary & { cpuMsPerRun: number };
  status: LatencySummary & { cpuMsPerRun: number };
}

/** CPU (user + system, ms) of this process's waited-for children so far: /proc/self/stat cutime + cstime. */
function childrenCpuMs(): number {
  try {
    const text = readFileSync('/proc/self/stat', 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

export function timeCli(
  env: { databaseUrl: string; temporalAddress: string; namespace: string },
  externalRef: string,
  runs = 10,
): CliTimings {
  const childEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    DATA_DIR: '/nonexistent-stack-dir',
    DATABASE_URL: env.databaseUrl,
    TEMPORAL_ADDRESS: env.temporalAddress,
    TEMPORAL_NAMESPACE: env.namespace,
  };
  const time = (args: string[]) => {
    const samples: number[] = [];
    const cpuBefore = childrenCpuMs();
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const result = spawnSync(process.execPath, [TENANTCTL, ...args], { env: childEnv, encoding: 'utf8' });
      samples.push(performance.now() - started);
      if (result.status !== 0) throw new Error(`tenantctl ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    }
    // Wall time waits on the machine and the stack; CPU is what the command itself costs.
    return { ...summarize(samples), cpuMsPerRun: Math.round((childrenCpuMs() - cpuBefore) / runs) };
  };
  const state = distState();
  return {
    runs,
    code:
      state !== 'fresh'
        ? `sources via tsx (dist ${state})`
        : distEntry(['status']).pathname.endsWith('/dist/cli/main.js')
          ? 'dist, CLI bundle'
          : 'dist (compiled)',
    help: time(['--help']),
    status: time(['status', externalRef]),
  };
}
