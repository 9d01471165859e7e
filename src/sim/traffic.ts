/**
 * Request statistics and the optional global rate limit, both on real (monotonic) time, never the sim clock:
 * the rotation benchmark measures the peak request rate against the limit.
 */
export class TrafficMeter {
  #total = 0;
  #rateLimited = 0;
  #faulted = 0;
  #unauthorized = new Map<string, number>();
  #byRoute = new Map<string, number>();
  #window: number[] = [];
  #peak = 0;

  record(routeKey: string, nowMs: number): void {
    this.#total += 1;
    this.#byRoute.set(routeKey, (this.#byRoute.get(routeKey) ?? 0) + 1);
    this.#window.push(nowMs);
    while (this.#window.length > 0 && (this.#window[0] ?? 0) <= nowMs - 1000) this.#window.shift();
    this.#peak = Math.max(this.#peak, this.#window.length);
  }

  countRateLimited(): void {
    this.#rateLimited += 1;
  }

  countFault(): void {
    this.#faulted += 1;
  }

  /** A 401 answered to an API call, keyed by the bearer's prefix (`svpk_`, `svsk_`, `sv_`, `none`). */
  countUnauthorized(prefix: string): void {
    this.#unauthorized.set(prefix, (this.#unauthorized.get(prefix) ?? 0) + 1);
  }

  snapshot(): TrafficStats {
    return {
      requestsTotal: this.#total,
      rateLimitedTotal: this.#rateLimited,
      faultsInjectedTotal: this.#faulted,
      unauthorizedByPrefix: Object.fromEntries(
        [...this.#unauthorized.entries()].sort(([a], [b]) => a.localeCompare(b)),
      ),
      byRoute: Object.fromEntries([...this.#byRoute.entries()].sort(([a], [b]) => a.localeCompare(b))),
      peakRequestsPerSecond: this.#peak,
    };
  }
}

export interface TrafficStats {
  requestsTotal: number;
  rateLimitedTotal: number;
  faultsInjectedTotal: number;
  /** 401 answers to API calls, by the prefix of the bearer token that was refused. */
  unauthorizedByPrefix: Record<string, number>;
  /** Keyed `METHOD /route/template` relative to /api/v1 (`unmatched` for unknown routes). */
  byRoute: Record<string, number>;
  /** Most API requests that arrived within any sliding 1-second window. */
  peakRequestsPerSecond: number;
}

/** Sliding-window limiter over accepted requests; answers how long until a slot frees up. */
export class RateLimiter {
  #accepted: number[] = [];

  constructor(private readonly perSecond: number) {}

  tryAcquire(nowMs: number): { ok: true } | { ok: false; retryAfterSeconds: number } {
    while (this.#accepted.length > 0 && (this.#accepted[0] ?? 0) <= nowMs - 1000) this.#accepted.shift();
    if (this.#accepted.length < this.perSecond) {
      this.#accepted.push(nowMs);
      return { ok: true };
    }
    const oldest = this.#accepted[0] ?? nowMs;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest + 1000 - nowMs) / 1000)) };
  }
}
