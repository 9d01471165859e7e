import { buildSimulatorApp } from './app.js';
import type { SimChoices } from './choices.js';
import type { SimSeed, SimSeedInput } from './seed.js';
import { snapshotOf, type SimStateSnapshot } from './snapshot.js';

export interface SimulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default: DEFAULT_SEED (one parent with fake fixture tokens). */
  seed?: SimSeed | SimSeedInput;
  /** Fixed delay added to every API call, for benchmarks. */
  latencyMs?: number;
  /** Global API rate limit (sliding 1 s window); beyond it 429 RATE_LIMITED with Retry-After. */
  rateLimitPerSecond?: number;
  choices?: Partial<SimChoices>;
  logger?: boolean;
}

export interface RunningSimulator {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `url + '/api/v1'` */
  apiBase: string;
  port: number;
  state(): SimStateSnapshot;
  close(): Promise<void>;
}

/** Starts a simulator on loopback (by default on a free port) and resolves once it is listening. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const { app, runtime } = buildSimulatorApp(options);
  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 0, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  return {
    url,
    apiBase: `${url}/api/v1`,
    port,
    state: () => snapshotOf(runtime),
    close: async () => {
      await app.close();
    },
  };
}

export { buildSimulatorApp, BODY_LIMIT_BYTES, type SimulatorApp, type SimulatorAppOptions } from './app.js';
export {
  defaultChoices,
  LastUseField,
  ListStyle,
  ReplayStyle,
  resolveChoices,
  SHAPE_NAMES,
  SIM_SHAPES,
  type ShapeName,
  type SimChoices,
} from './choices.js';
export { SimErrorCode } from './errors.js';
export { FaultMode, type FaultRuleInput } from './faults.js';
export { REGISTRY_EVENTS, signBody, type RegistryEvent } from './registry-delivery.js';
export { SimRuntime } from './runtime.js';
export {
  DEFAULT_PAID_BALANCE_MICRO_USD,
  DEFAULT_PARENT_ID,
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
  DEFAULT_PROMO_BALANCE_MICRO_USD,
  DEFAULT_SEED,
  loadSeedFile,
  parseSeed,
  SimSeedError,
  type SimSeed,
  type SimSeedInput,
} from './seed.js';
export type { SimStateSnapshot } from './snapshot.js';
export type { TrafficStats } from './traffic.js';
