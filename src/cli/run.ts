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
 * Runs one of the commands that administer the infrastructure itself (migrate, setup, reseal,
 * parent-key import): they need the server's credentials (DATABASE_URL, SECRETS_KEYS, Temporal) and
 * say so in their help. Every operator command goes through the gateway instead (`withGateway`).
 */
export async function withRuntime<T>(fn: (runtime: CliRuntime) => Promise<T>): Promise<T> {
  const { createCliRuntime } = await import('./runtime.js');
  const runtime = createCliRuntime(operatorTokenFlag);
  try {
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

/**
 * A ref or id as one path segment of a gateway URL: a `/` in it can never change the route. `.` and
 * `..` cannot be sent as a segment at all (URL parsing resolves them, escaped or not), so they are
 * refused here by name, as the gateway refuses them.
 */
export function segment(value: string, field = 'id'): string {
  if (value === '.' || value === '..') throw new SegmentError(`${field}: must not be "${value}"`);
  return encodeURIComponent(value);
}

/** Reported like every input problem: one line, exit code 2 (see src/main/report-error.ts). */
class SegmentError extends Error {
  override name = 'SegmentError';
  readonly problems: string[];
  constructor(problem: string) {
    super(problem);
    this.problems = [problem];
  }
}

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}
