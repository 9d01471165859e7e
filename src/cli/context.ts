import { existsSync, readFileSync } from 'node:fs';
import { describeError } from './failure.js';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { InvalidInputError } from '../domain/tenant-input.js';

/**
 * The dev stack (`npm start`) writes the addresses it started into DATA_DIR/stack.json, so that
 * `npx tenantctl ...` in another terminal talks to it with no environment set. Real environment
 * variables always win.
 */
export function stackFile(dataDir: string): string {
  return join(dataDir, 'stack.json');
}

export function loadCliConfig(env: Record<string, string | undefined> = process.env): Config {
  const dataDir = env.DATA_DIR || '.data';
  let defaults: Record<string, string> = {};
  const file = stackFile(dataDir);
  if (existsSync(file)) {
    try {
      defaults = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    } catch {
      throw new ConfigError([`${file}: not valid JSON (delete it; \`npm start\` writes it again)`]);
    }
  }
  return loadConfig({ ...defaults, ...env });
}

/** Prints an error as one clear line per problem (never a stack trace unless TENANTCTL_DEBUG=1). */
export function reportError(error: unknown): number {
  if (process.env.TENANTCTL_DEBUG === '1') console.error(error);
  else if (error instanceof ConfigError || error instanceof InvalidInputError) for (const problem of error.problems) console.error(`error: ${problem}`);
  else console.error(`error: ${describeError(error)}`);
  return error instanceof ConfigError || error instanceof InvalidInputError ? 2 : 1;
}
