/**
 * Child-process entry of the benchmark's platform simulator. It runs apart from the worker so the
 * simulator's request handling does not compete with the worker for one JavaScript thread (the
 * real platform is remote). Options come as JSON in argv; the address goes back over IPC. It
 * closes when the parent says so, disconnects, or dies.
 */
import { startSimulator, type SimulatorOptions } from '../../src/sim/index.js';

const options = JSON.parse(process.argv[2] ?? '{}') as SimulatorOptions;
const sim = await startSimulator({ ...options, port: 0, host: '127.0.0.1' });
let closing = false;
const close = () => {
  if (closing) return;
  closing = true;
  void sim.close().finally(() => process.exit(0));
};
process.on('disconnect', close);
process.on('SIGTERM', close);
process.on('SIGINT', close);
process.send?.({ url: sim.url, apiBase: sim.apiBase });
