import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A path in the checkout (where package.json is), from this module or from its compiled copy in
 * dist/ (bin/tenantctl.js runs that one): files read at run time — migrations, the workflow sources
 * the worker bundles — stay in the checkout and are never copied to dist/.
 */
export function projectPath(...segments: string[]): string {
  return join(projectRoot(), ...segments);
}

let root: string | undefined;

function projectRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  root = dir;
  return root;
}
