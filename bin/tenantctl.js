#!/usr/bin/env node
// Launcher. Runs the CLI compiled to dist/ when that copy is fresh (see dist-fresh.js: the one-file-per-chunk
// bundle for operator commands, the compiled modules for the worker and gateway); otherwise —
// never built, or a source edited since — the TypeScript through tsx: slower to start, never stale.
// TENANTCTL_FROM_SOURCE=1 forces tsx; TENANTCTL_FROM_DIST=1 (the image) trusts a built dist/ (see launchState).
import { distEntry, launchState } from './dist-fresh.js';

const state = launchState();
if (state === 'fresh') {
  await import(distEntry(process.argv.slice(2)).href);
} else {
  if (state === 'stale' && process.stderr.isTTY)
    console.error(
      'tenantctl: sources changed since the last build, running them through tsx (`npm run build` for a fast start)',
    );
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
