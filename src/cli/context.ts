import { loadConfig, type Config } from '../config/index.js';
import { withStackDefaults } from './stack-env.js';

/**
 * The configuration, with the dev stack's stack.json (see stackFile) under the real environment. Its
 * warnings (a variable that looks like ours but is not) are reported by the caller: the worker and
 * gateway through their logger, other commands on stderr (runtime.ts).
 */
export function loadCliConfig(env: Record<string, string | undefined> = process.env): Config {
  return loadConfig(withStackDefaults(env));
}
