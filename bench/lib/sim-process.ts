import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SimStateSnapshot, SimulatorOptions } from '../../src/sim/index.js';
import type { TrafficStats } from '../../src/sim/traffic.js';
import type { Cleanup } from '../../src/infra/cleanup.js';
import { labelProcess } from './process-cpu.js';

export interface SimProcess {
  url: string;
  apiBase: string;
  pid: number;
  state(): Promise<SimStateSnapshot>;
  stats(): Promise<TrafficStats>;
}

const CHILD = fileURLToPath(new URL('./sim-child.ts', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Starts the simulator in a child process (see sim-child.ts) and registers its stop. */
export async function startSimProcess(
  options: Omit<SimulatorOptions, 'port' | 'host' | 'logger'>,
  cleanup: Cleanup,
): Promise<SimProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(options)], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  labelProcess(child.pid!, 'simulator');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanup.defer(`simulator (pid ${child.pid})`, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });
  const address = await new Promise<{ url: string; apiBase: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { url: string; apiBase: string }));
    child.once('exit', (code) => reject(new Error(`the simulator exited before listening (code ${code})`)));
    child.once('error', reject);
  });
  const state = async (): Promise<SimStateSnapshot> => {
    const response = await fetch(`${address.url}/__sim/state`);
    if (!response.ok) throw new Error(`GET /__sim/state answered ${response.status}`);
    return (await response.json()) as SimStateSnapshot;
  };
  return { ...address, pid: child.pid!, state, stats: async () => (await state()).stats };
}
