import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { stackFile } from '../main/stack/stack-file.js';

/** The configuration, with the dev stack's stack.json (see stackFile) under the real environment. */
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
