/**
 * Everything a run starts registers how to stop it; stops run newest first, each bounded in time,
 * so a part that hangs cannot keep the run (or a test) from ending.
 */
export class Cleanup {
  #stops: Array<{ label: string; stop: () => Promise<void> }> = [];
  #running: Promise<void> | undefined;

  constructor(private readonly log: (line: string) => void) {}

  defer(label: string, stop: () => Promise<void>): void {
    this.#stops.push({ label, stop });
  }

  runAll(): Promise<void> {
    this.#running ??= (async () => {
      while (this.#stops.length > 0) {
        const { label, stop } = this.#stops.pop()!;
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => (timer = setTimeout(() => (this.log(`cleanup: ${label} did not stop within 20 s`), resolve()), 20_000)));
        await Promise.race([stop().catch((error: unknown) => this.log(`cleanup: ${label}: ${String(error)}`)), timeout]);
        clearTimeout(timer);
      }
    })();
    return this.#running;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
