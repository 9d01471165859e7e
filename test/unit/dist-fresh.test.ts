import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { commandOf, distEntry, distState, launchState } from '../../bin/dist-fresh.js';

/**
 * bin/tenantctl.js runs the compiled dist/ only when distState() says fresh: a stale copy must never
 * run (tests spawn the launcher, and would otherwise test yesterday's code).
 */
describe('the launcher runs dist/ only while it is fresh', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function checkout(builtAtMs: number | undefined): URL {
    dir = mkdtempSync(join(tmpdir(), 'dist-fresh-'));
    for (const sub of ['src/cli', 'workflows', 'activities', 'dist']) mkdirSync(join(dir, sub), { recursive: true });
    for (const file of [
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'src/cli/main.ts',
      'workflows/index.ts',
      'activities/index.ts',
    ])
      writeFileSync(join(dir, file), '{}');
    const old = new Date(Date.now() - 60_000);
    for (const file of [
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'src/cli/main.ts',
      'workflows/index.ts',
      'activities/index.ts',
    ])
      utimesSync(join(dir, file), old, old);
    // The directories too: their mtimes count (a deleted source changes its directory), and they were
    // made a moment ago, possibly after the build time the caller took.
    for (const sub of ['src/cli', 'src', 'workflows', 'activities']) utimesSync(join(dir, sub), old, old);
    if (builtAtMs !== undefined) writeFileSync(join(dir, 'dist/.built'), JSON.stringify({ startedAtMs: builtAtMs }));
    return pathToFileURL(`${dir}/`);
  }

  it('is fresh when built after every source changed', () => {
    expect(distState(checkout(Date.now()))).toBe('fresh');
  });

  it('is stale once any source under src/, workflows/ or activities/ is newer than the build', () => {
    for (const file of ['src/cli/main.ts', 'workflows/index.ts', 'activities/index.ts', 'tsconfig.json']) {
      const root = checkout(Date.now() - 1000);
      const now = new Date();
      utimesSync(join(dir, file), now, now);
      expect(distState(root), file).toBe('stale');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is missing when never built or the build failed (no dist/.built)', () => {
    expect(distState(checkout(undefined))).toBe('missing');
  });

  it('runs a built dist/ regardless of file times with TENANTCTL_FROM_DIST=1 (the image), never a missing one', () => {
    const root = checkout(Date.now() - 1000);
    const now = new Date();
    utimesSync(join(dir, 'src/cli'), now, now); // a layer gave the directory a newer time than the build
    expect(launchState({}, root)).toBe('stale');
    expect(launchState({ TENANTCTL_FROM_DIST: '1' }, root)).toBe('fresh');
    expect(launchState({ TENANTCTL_FROM_DIST: '1', TENANTCTL_FROM_SOURCE: '1' }, root)).toBe('forced-source');
    rmSync(dir, { recursive: true, force: true });
    expect(launchState({ TENANTCTL_FROM_DIST: '1' }, checkout(undefined))).toBe('missing');
  });

  it('runs operator commands from the CLI bundle and the worker and gateway from the compiled modules', () => {
    const root = checkout(Date.now());
    const entry = (...args: string[]) => distEntry(args, root).href.slice(root.href.length);
    // No bundle (esbuild was missing or failed): everything runs the compiled modules.
    expect(entry('status', 'acme')).toBe('dist/src/cli/main.js');
    mkdirSync(join(dir, 'dist/cli'));
    writeFileSync(join(dir, 'dist/cli/main.js'), '');
    expect(entry('status', 'acme')).toBe('dist/cli/main.js');
    expect(entry('--help')).toBe('dist/cli/main.js');
    expect(entry()).toBe('dist/cli/main.js');
    expect(entry('worker')).toBe('dist/src/cli/main.js');
    expect(entry('gateway')).toBe('dist/src/cli/main.js');
    // The global option's value is not the command.
    expect(entry('--operator-token', 'worker', 'status', 'acme')).toBe('dist/cli/main.js');
    expect(entry('--operator-token', 'tok', 'worker')).toBe('dist/src/cli/main.js');
    expect(entry('--operator-token=tok', 'gateway')).toBe('dist/src/cli/main.js');
    expect(commandOf(['--operator-token', 'tok', 'key', 'reveal'])).toBe('key');
  });
});
