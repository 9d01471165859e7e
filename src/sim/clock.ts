/**
 * The simulator's clock: real time plus an offset that `POST /__sim/clock/advance` grows. Time keeps passing
 * normally (so last-use times move on their own), and tests can jump past retention windows instantly.
 */
export class SimClock {
  #offsetMs = 0;

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  iso(): string {
    return new Date(this.now()).toISOString();
  }

  advance(seconds: number): void {
    this.#offsetMs += seconds * 1000;
  }

  reset(): void {
    this.#offsetMs = 0;
  }
}

/** ISO 8601 UTC with milliseconds and `Z`, as the contract requires; `null` stays `null`. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
