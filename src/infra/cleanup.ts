/**
 * Everything a run starts (dev server, Postgres, simulator, worker, pools) registers how to stop
 * here; stops run newest first, each bounded in time, so a part that hangs cannot keep the stack,
 * a benchmark, a chaos run or a test from ending (also on Ctrl-C).
 */
export class Cleanup {
  #stops: Array<{ label: string; stop: () => Promise<void> }> = [];
  #running: Promise<void> | undefined;

  constructor(private readonly log: (line: string) => void) {}

  defer(label: string, stop: () => Promise<void>): void {
    this.#stops.push({ label, stop });
  }

  /** Idempotent: a second call (Ctrl-C during the normal end) waits for the first. */
  runAll(): Promise<void> {
    this.#running ??= (async () => {
      while (this.#stops.length > 0) {
        const { label, stop } = this.#stops.pop()!;
        this.log(`stopping ${label}`);
        try {
          await withTimeout(stop(), 15_000, `stopping ${label}`);
        } catch (error) {
          this.log(`cleanup: ${label}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    })();
    return this.#running;
  }
}

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} took more than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
