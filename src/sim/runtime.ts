import { resolveChoices, type SimChoices } from './choices.js';
import { SimClock } from './clock.js';
import { FaultInjector, seededRandom } from './faults.js';
import { IdempotencyStore } from './idempotency.js';
import { RegistryDelivery } from './registry-delivery.js';
import { DEFAULT_SEED, parseSeed, type SimSeed, type SimSeedInput } from './seed.js';
import { createState, type SimState } from './state.js';
import { RateLimiter, TrafficMeter } from './traffic.js';

export interface SimRuntimeOptions {
  seed?: SimSeed | SimSeedInput;
  latencyMs?: number;
  rateLimitPerSecond?: number;
  choices?: Partial<SimChoices>;
}

/** Everything one simulator instance holds; `reset()` returns it to the seed. */
export class SimRuntime {
  readonly seed: SimSeed;
  readonly choices: SimChoices;
  readonly clock = new SimClock();
  readonly idempotency: IdempotencyStore;
  readonly faults: FaultInjector;
  readonly delivery: RegistryDelivery;
  readonly latencyMs: number;
  state: SimState;
  traffic = new TrafficMeter();
  rateLimiter: RateLimiter | null;
  readonly #rateLimitPerSecond: number | undefined;

  constructor(options: SimRuntimeOptions = {}) {
    this.seed = parseSeed(options.seed ?? DEFAULT_SEED);
    this.choices = resolveChoices(options.choices);
    this.latencyMs = options.latencyMs ?? 0;
    this.rateLimiter = options.rateLimitPerSecond ? new RateLimiter(options.rateLimitPerSecond) : null;
    this.idempotency = new IdempotencyStore(this.clock, this.seed.idempotencyRetentionSeconds, this.choices);
    const seed = this.choices.faultRandomSeed;
    this.faults = new FaultInjector(seed === null ? Math.random : seededRandom(seed));
    this.delivery = new RegistryDelivery(this.clock, this.choices, this.seed.deliveryHistoryLimit);
    this.state = createState(this.seed, this.clock.now());
    this.#rateLimitPerSecond = options.rateLimitPerSecond;
  }

  /** New traffic statistics from now, under this global rate limit (null: none); the state is kept. */
  restartTraffic(rateLimitPerSecond: number | null): void {
    this.traffic = new TrafficMeter();
    this.rateLimiter = rateLimitPerSecond ? new RateLimiter(rateLimitPerSecond) : null;
  }

  /** Back to the seed: state, clock offset, idempotency records, faults, stats; pending deliveries stop. */
  reset(): void {
    this.delivery.cancelAll();
    this.clock.reset();
    this.idempotency.clear();
    this.faults.clear();
    this.traffic = new TrafficMeter();
    this.rateLimiter = this.#rateLimitPerSecond ? new RateLimiter(this.#rateLimitPerSecond) : null;
    this.state = createState(this.seed, this.clock.now());
  }
}
