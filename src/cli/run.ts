import type { CliRuntime } from './runtime.js';
import type { GatewayClient } from '../client/gateway-client.js';

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

/**
 * Runs a command with its runtime. With an OPERATORS list every operator command first
 * authenticates the presented token (an unknown or missing one is one error, before anything is
 * read or written); `local` marks the commands that administer the infrastructure itself
 * (migrate, setup, reseal, parent-key import), which need its credentials rather than a token.
 */
export async function withRuntime<T>(
  fn: (runtime: CliRuntime) => Promise<T>,
  options: { local?: boolean } = {},
): Promise<T> {
  const { createCliRuntime } = await import('./runtime.js');
  const runtime = createCliRuntime(operatorTokenFlag);
  try {
    if (!options.local && runtime.safeOps.operators.size > 0) runtime.operator(undefined);
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Runs an operator command that talks to the gateway only: no database, no master key, no Temporal
 * connection is opened, and every rule (who may, approvals, limits) is decided by the server.
 */
export async function withGateway<T>(fn: (gateway: GatewayClient) => Promise<T>): Promise<T> {
  const { createCliRuntime } = await import('./runtime.js');
  return fn(createCliRuntime(operatorTokenFlag).gateway());
}

/** A ref or id as one path segment of a gateway URL: a `/` or `..` in it can never change the route. */
export const segment = (value: string) => encodeURIComponent(value);

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}
