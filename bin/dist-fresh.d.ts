/** See dist-fresh.js. `root`: the checkout (a file: URL ending in /); by default this one. */
export function distState(root?: URL): 'fresh' | 'stale' | 'missing';
/** What bin/tenantctl.js runs, from TENANTCTL_FROM_SOURCE / TENANTCTL_FROM_DIST and distState. See dist-fresh.js. */
export function launchState(
  env?: Record<string, string | undefined>,
  root?: URL,
): 'fresh' | 'stale' | 'missing' | 'forced-source';
/** When the last build started (dist/.built, ms since the epoch); undefined when never built. */
export function builtAtMs(root?: URL): number | undefined;
/** The command name in tenantctl's arguments (after global options). See dist-fresh.js. */
export function commandOf(args: readonly string[]): string | undefined;
/** The compiled entry a fresh dist/ runs for these arguments: the CLI bundle, or dist/src/cli/main.js. */
export function distEntry(args: readonly string[], root?: URL): URL;
