import { describeError } from '../client/describe-error.js';
import { ConfigError } from '../config.js';
import { InvalidInputError } from '../domain/tenant-input.js';

/** Prints an error as one clear line per problem (never a stack trace unless TENANTCTL_DEBUG=1). */
export function reportError(error: unknown): number {
  if (process.env.TENANTCTL_DEBUG === '1') console.error(error);
  else if (error instanceof ConfigError || error instanceof InvalidInputError)
    for (const problem of error.problems) console.error(`error: ${problem}`);
  else console.error(`error: ${describeError(error)}`);
  return error instanceof ConfigError || error instanceof InvalidInputError ? 2 : 1;
}
