import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { distState } from '../../bin/dist-fresh.js';
import { TENANTCTL } from '../harness/cli.js';

/**
 * `tenantctl --help` answers like a CLI because it loads commander and the command definitions
 * only: each action imports its dependencies when it runs. Checked by the modules loaded (not by
 * a clock): a static import of pg, Temporal, Fastify or zod in a command file fails this. From the CLI
 * bundle (dist/cli/, see scripts/build-dist.js) the modules loaded are those of the chunks loaded.
 */
const HEAVY = ['@temporalio/', '/pg/', '/fastify/', '/zod/', '/pino/'];

const BUNDLE = fileURLToPath(new URL('../../dist/cli/', import.meta.url));

/** The modules each launch loaded: those it resolved, and for a chunk of the CLI bundle the modules in it. */
function modulesLoaded(stderr: string): string[] {
  const chunks = existsSync(`${BUNDLE}chunks.json`)
    ? (JSON.parse(readFileSync(`${BUNDLE}chunks.json`, 'utf8')) as Record<string, string[]>)
    : {};
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('LOADED '))
    .flatMap((line) => {
      const url = line.slice('LOADED '.length);
      const chunk = url.startsWith('file://') ? fileURLToPath(url) : '';
      return chunk.startsWith(BUNDLE) ? [url, ...(chunks[chunk.slice(BUNDLE.length)] ?? [])] : [url];
    });
}

const dir = mkdtempSync(join(tmpdir(), 'cli-lazy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function launch(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', join(dir, 'register.mjs'), TENANTCTL, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    encoding: 'utf8',
  });
}

describe('tenantctl --help loads no command dependencies', () => {
  writeFileSync(
    join(dir, 'hooks.mjs'),
    'export async function resolve(specifier, context, next) { const r = await ' +
      'next(specifier, context); process.stderr.write(`LOADED ${r.url}\\n`); return r; ' +
      '}\n',
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    "import { register } from 'node:module'; register('./hooks.mjs', import.meta.url);\n",
  );

  for (const [label, env] of [
    ['as launched (dist/ when fresh)', {}],
    ['from the sources (tsx)', { TENANTCTL_FROM_SOURCE: '1' }],
  ] as const) {
    it(label, () => {
      const result = launch(['--help'], env);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toContain('Usage: tenantctl');
      const loaded = modulesLoaded(result.stderr);
      expect(loaded.some((line) => line.includes('/cli/main.'))).toBe(true);
      expect(loaded.filter((line) => HEAVY.some((heavy) => line.includes(`node_modules${heavy}`)))).toEqual([]);
    });
  }
});

describe('a built dist/ runs operator commands from the CLI bundle, the worker and gateway unbundled', () => {
  // CI installs (and so builds) before the tests: there the bundle must be what runs. A local checkout
  // edited since its last build runs the sources, and this has nothing to check.
  const built = distState() === 'fresh';
  it('CI tests a fresh build with its CLI bundle', () => {
    if (process.env.CI !== '1' && !built) return;
    expect(distState()).toBe('fresh');
    expect(existsSync(`${BUNDLE}main.js`)).toBe(true);
  });

  it.runIf(built)('status from the bundle (and its Temporal client in it), worker and gateway from dist/src', () => {
    const entries = (args: string[]) =>
      launch(args)
        .stderr.split('\n')
        .filter((line) => /LOADED file:.*\/dist\/(cli|src\/cli)\/main\.js$/.test(line))
        .map((line) => line.replace(/^.*\/dist\//, 'dist/'));
    expect(entries(['--help'])).toEqual(['dist/cli/main.js']);
    expect(entries(['status', '--help'])).toEqual(['dist/cli/main.js']);
    expect(entries(['worker', '--help'])).toEqual(['dist/src/cli/main.js']);
    expect(entries(['--operator-token', 't', 'gateway', '--help'])).toEqual(['dist/src/cli/main.js']);
    // An operator command with no gateway to talk to fails on its configuration, named, from the bundle.
    const status = launch(['status', 'acme'], { DATA_DIR: '/nonexistent-stack-dir' });
    expect(status.status).toBe(2);
    expect(status.stderr).toContain('error: TENANTCTL_GATEWAY_URL: is not set');
    // Every package it used came out of the bundle's chunks: no file read from node_modules one by one.
    expect(status.stderr.split('\n').filter((line) => /^LOADED file:.*\/node_modules\//.test(line))).toEqual([]);
  });
});
