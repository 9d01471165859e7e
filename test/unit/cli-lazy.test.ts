import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TENANTCTL } from '../harness/cli.js';

/**
 * `tenantctl --help` answers like a CLI because it loads commander and the command definitions
 * only: each action imports its dependencies when it runs. Checked by the modules loaded (not by
 * a clock): a static import of pg, Temporal, Fastify or zod in a command file fails this.
 */
const HEAVY = ['@temporalio/', '/pg/', '/fastify/', '/zod/', '/pino/'];

describe('tenantctl --help loads no command dependencies', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-lazy-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
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
      const result = spawnSync(process.execPath, ['--import', join(dir, 'register.mjs'), TENANTCTL, '--help'], {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
        encoding: 'utf8',
      });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toContain('Usage: tenantctl');
      const loaded = result.stderr.split('\n').filter((line) => line.startsWith('LOADED '));
      expect(loaded.some((line) => line.includes('/cli/main.'))).toBe(true);
      expect(loaded.filter((line) => HEAVY.some((heavy) => line.includes(`node_modules${heavy}`)))).toEqual([]);
    });
  }
});
