import { existsSync, readFileSync } from 'node:fs';
import { DEFAULTS } from '../config/defaults.js';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { stackFile } from '../main/stack/stack-file.js';

/**
 * The configuration, with the dev stack's stack.json (see stackFile) under the real environment. Its
 * warnings (a variable that looks like ours but is not) are reported by the caller: the worker and
 * gateway through their logger, other commands on stderr (runtime.ts).
 */
export function loadCliConfig(env: Record<string, string | undefined> = process.env): Config {
  const dataDir = env.DATA_DIR || DEFAULTS.DATA_DIR;
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
