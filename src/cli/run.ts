import type { CliRuntime } from './runtime.js';

/**
 * What command actions share, light enough to load for `tenantctl --help`: the runtime (pg, the
 * Temporal client and the codec) is imported only when a command body runs. Every command file
 * keeps to that rule: static imports are types and commander; dependencies load inside the action.
 */
export async function withRuntime<T>(fn: (runtime: CliRuntime) => Promise<T>): Promise<T> {
  const { createCliRuntime } = await import('./runtime.js');
  const runtime = createCliRuntime();
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}
