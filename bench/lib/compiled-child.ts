import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { builtAtMs, distState } from '../../bin/dist-fresh.js';

const ROOT = new URL('../../', import.meta.url);

/** Newest mtime of bench/'s TypeScript (results excluded: every run writes one). */
function newestBenchSourceMs(): number {
  const base = new URL('bench/', ROOT);
  let newest = 0;
  for (const entry of readdirSync(base, { recursive: true }) as string[]) {
    if (entry.startsWith('results') || !entry.endsWith('.ts')) continue;
    newest = Math.max(newest, statSync(new URL(entry, base)).mtimeMs);
  }
  return newest;
}

/**
 * How to start a bench child process (a `.ts` file under bench/): its compiled copy in dist/ when that is fresh
 * (`npm run build`), as `tenantctl worker` runs in production, else the source through tsx, which also turns on
 * source maps for every stack trace and costs memory of its own. `code` says which ran, for the report.
 */
export function compiledChild(sourceUrl: URL): { args: string[]; code: string } {
  const source = fileURLToPath(sourceUrl);
  const state = distState();
  const benchFresh = state === 'fresh' && newestBenchSourceMs() < builtAtMs()!;
  if (benchFresh) {
    const relative = source.slice(fileURLToPath(ROOT).length).replace(/\.ts$/, '.js');
    return { args: [fileURLToPath(new URL(`dist/${relative}`, ROOT))], code: 'dist (compiled)' };
  }
  return { args: ['--import', 'tsx', source], code: `sources via tsx (dist ${state === 'fresh' ? 'stale' : state})` };
}
