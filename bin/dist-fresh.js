// Whether dist/ (built by `npm run build`, also run by `npm install`) may run instead of the
// TypeScript sources: it was built, and no source it came from changed since the build STARTED.
// Used by bin/tenantctl.js on every start (a stat per source file: 432 of them, 6-15 ms in a fresh process) and
// by the bench's CLI timings.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';

const checkout = new URL('../', import.meta.url);
const SOURCES = ['src', 'workflows', 'activities'];
const CONFIGS = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** When the last build of `root` started (dist/.built), or undefined when it was never built. */
export function builtAtMs(root = checkout) {
  try {
    return JSON.parse(readFileSync(new URL('dist/.built', root), 'utf8')).startedAtMs;
  } catch {
    return undefined;
  }
}

function newestSourceMs(root) {
  let newest = 0;
  for (const file of CONFIGS) newest = Math.max(newest, statSync(new URL(file, root)).mtimeMs);
  for (const dir of SOURCES) {
    const base = new URL(`${dir}/`, root);
    for (const entry of readdirSync(base, { recursive: true }))
      newest = Math.max(newest, statSync(new URL(entry, base)).mtimeMs);
  }
  return newest;
}

/** 'fresh': run dist/; 'missing': never built (or the build failed); 'stale': a source changed since. */
export function distState(root = checkout) {
  const built = builtAtMs(root);
  if (typeof built !== 'number') return 'missing';
  return newestSourceMs(root) < built ? 'fresh' : 'stale';
}

/**
 * What bin/tenantctl.js runs. TENANTCTL_FROM_SOURCE=1 forces the sources (tsx). TENANTCTL_FROM_DIST=1 runs a
 * built dist/ without comparing file times: for an image whose build stage compiled the very sources it ships
 * (copies and layers can give directories newer times than the build, which would send every start through tsx).
 */
export function launchState(env = process.env, root = checkout) {
  if (env.TENANTCTL_FROM_SOURCE === '1') return 'forced-source';
  if (env.TENANTCTL_FROM_DIST === '1' && typeof builtAtMs(root) === 'number') return 'fresh';
  return distState(root);
}

/** Commands that run a long-lived process (worker, gateway): they run the compiled modules as they are, unbundled. */
const SERVER_COMMANDS = new Set(['worker', 'gateway']);

/** The command name in tenantctl's arguments: the first one that is not a global option or its value. */
export function commandOf(args) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--operator-token') i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/**
 * Which compiled entry a fresh dist/ runs: the CLI bundle (dist/cli/main.js, made by the build when esbuild is
 * there) for operator commands, dist/src/cli/main.js for the long-lived worker and gateway and when there is no
 * bundle. The bundle starts faster (one read per chunk, no module-by-module resolution); the servers keep the
 * modules tsc compiled, one copy of each package, as the tests and the image run them.
 */
export function distEntry(args, root = checkout) {
  const bundle = new URL('dist/cli/main.js', root);
  return !SERVER_COMMANDS.has(commandOf(args) ?? '') && existsSync(bundle)
    ? bundle
    : new URL('dist/src/cli/main.js', root);
}
