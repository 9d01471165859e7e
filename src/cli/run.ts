import type { CliRuntime } from './runtime.js';

/**
 * What command actions share, light enough to load for `tenantctl --help`: the runtime (pg, the
 * Temporal client and the codec) is imported only when a command body runs. Every command file
 * keeps to that rule: static imports are types and commander; dependencies load inside the action.
 */
let operatorTokenFlag: string | undefined;

/** The global `--operator-token` (set by main.ts before an action runs); TENANTCTL_OPERATOR_TOKEN otherwise. */
export function setOperatorTokenFlag(token: string | undefined): void {
  operatorTokenFlag = token;
}

export async function withRuntime<T>(fn: (runtime: CliRuntime) => Promise<T>): Promise<T> {
  const { createCliRuntime } = await import('./runtime.js');
  const runtime = createCliRuntime(operatorTokenFlag);
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}
