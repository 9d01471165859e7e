import { describeError } from '../client/describe-error.js';
import { GatewayCallError } from '../client/gateway-client.js';
import { ConfigError } from '../config/index.js';
import { InvalidInputError } from '../domain/tenant-input.js';

/**
 * Prints an error as one clear line per problem (never a stack trace unless TENANTCTL_DEBUG=1) and
 * returns the exit code: 2 for input or configuration the caller must fix (a gateway's 400 and 401
 * included), 1 for anything else.
 */
export function reportError(error: unknown): number {
  if (process.env.TENANTCTL_DEBUG === '1') console.error(error);
  else for (const problem of problemsOf(error)) console.error(`error: ${problem}`);
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
