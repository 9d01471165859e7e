import { existsSync, readFileSync } from 'node:fs';
import { ConfigError } from '../config/config-error.js';
import { DEFAULTS } from '../config/defaults.js';
import { stackFile } from '../main/stack/stack-file.js';

/**
 * The environment with the dev stack's stack.json (see stackFile) under it: what tenantctl reads its settings
 * from, the whole configuration (context.ts) or a gateway command's few (gateway-access.ts).
 */
export function withStackDefaults(env: Record<string, string | undefined>): Record<string, string | undefined> {
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
  return { ...defaults, ...env };
}
