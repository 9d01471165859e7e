import type { PlatformClient } from '../../src/platform/index.js';

/**
 * A platform client for one attempt of a step, whose calls a test can hold: `before(method)` runs before the call
 * is sent, `after(method)` once the platform has answered and before the attempt sees the answer (a response held
 * in flight), `instead(method)` replaces the call. Two attempts built on two gated clients over the same simulator
 * overlap exactly where the test says, so every interleaving that matters can be run, not hoped for.
 */
export type Method = keyof PlatformClient;
type Hook = (args: unknown[]) => Promise<void> | void;

export interface Gates {
  before?: Partial<Record<Method, Hook>>;
  after?: Partial<Record<Method, Hook>>;
  instead?: Partial<Record<Method, (args: unknown[]) => Promise<unknown>>>;
}

export function gatedPlatform(real: PlatformClient, gates: Gates): PlatformClient {
  return new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const method = prop as Method;
      return async (...args: unknown[]) => {
        await gates.before?.[method]?.(args);
        const instead = gates.instead?.[method];
        const result = instead
          ? await instead(args)
          : await (value as (...a: unknown[]) => unknown).apply(target, args);
        await gates.after?.[method]?.(args);
        return result;
      };
    },
  });
}

/** A point one attempt stops at until the test opens it; `reached` resolves when the attempt gets there. */
export interface Barrier {
  /** Use as a hook: resolves `reached`, then waits for `open()`. */
  hook: () => Promise<void>;
  reached: Promise<void>;
  open: () => void;
}

export function barrier(): Barrier {
  let arrived!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (arrived = r));
  const opened = new Promise<void>((r) => (release = r));
  return {
    hook: async () => {
      arrived();
      await opened;
    },
    reached,
    open: () => release(),
  };
}

/** A hook that holds only the n-th call (1-based) at the barrier; the other calls pass. */
export function onCall(n: number, hook: () => Promise<void>): () => Promise<void> {
  let calls = 0;
  return async () => {
    calls += 1;
    if (calls === n) await hook();
  };
}
