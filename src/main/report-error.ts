import { describeError } from '../client/describe-error.js';
import { GatewayCallError } from '../api-client/gateway-client.js';
import { debugRequested } from '../config/development.js';
import { ConfigError } from '../config/index.js';
import { InvalidInputError } from '../domain/tenant-input.js';

/** Where the report goes: one line a problem, or the whole error (its stack) under TENANTCTL_DEBUG=1. */
export interface ErrorWriter {
  problem(line: string): void;
  debug(error: unknown): void;
}

const toConsole: ErrorWriter = { problem: (line) => console.error(line), debug: (error) => console.error(error) };

/**
 * Prints an error as one clear line per problem (never a stack trace unless TENANTCTL_DEBUG=1) and
 * returns the exit code: 2 for input or configuration the caller must fix (a gateway's 400 and 401
 * included), 1 for anything else. tenantctl passes its terminal-safe printer (src/cli/output.ts): a
 * problem often quotes input.
 */
export function reportError(error: unknown, write: ErrorWriter = toConsole): number {
  if (debugRequested()) write.debug(error);
  else for (const problem of problemsOf(error)) write.problem(`error: ${problem}`);
  return isCallersToFix(error) ? 2 : 1;
}

/** An input or configuration error of ours: it lists its problems (one line each). */
function isProblemList(error: unknown): error is Error & { problems: string[] } {
  return (
    error instanceof ConfigError ||
    error instanceof InvalidInputError ||
    (error instanceof Error && Array.isArray((error as { problems?: unknown }).problems))
  );
}

function problemsOf(error: unknown): string[] {
  if (isProblemList(error)) return error.problems;
  if (error instanceof GatewayCallError && error.code === 'INVALID_INPUT')
    return error.message.replace(/^invalid input: /, '').split('; ');
  return [describeError(error)];
}

function isCallersToFix(error: unknown): boolean {
  if (error instanceof GatewayCallError) return error.status === 400 || error.status === 401;
  return isProblemList(error);
}
