import { setFlagsFromString } from 'node:v8';
import { launchedSemiSpaceMb, WORKER_NODE_FLAGS, WORKER_SEMI_SPACE_MB } from '../../infra/worker-node-flags.js';

/**
 * How far V8 lets a worker's heaps grow past what the last full collection kept, in percent
 * (WORKER_HEAP_GROWING_PERCENT). Left to itself V8 grows the old generation by up to 4x between
 * collections, lazily: with 500 onboardings in flight the worker process peaked at 300–400 MB, most of
 * it garbage not yet collected. At 20% it collects sooner and peaked at 269–278 MB (`npm run bench --
 * onboarding --count 500 --concurrency 500`, issue 20), at the price of more full collections (CPU per
 * onboarding median 97 ms over five runs against 89 ms over four at 0, inside the bench's noise; the
 * runbook's Worker memory). Unlike a heap cap (--max-old-space-size) this cannot stop the worker: the heap
 * still grows as far as the live workflows need. The flag is process-wide, so it holds for the
 * workflow threads too; set before the worker creates them. 0 leaves V8's own heuristics. The
 * default (20) is in src/config.ts.
 */
export function applyWorkerHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
  // Launched without the worker's flags (worker-node-flags.ts): the workflow threads' heaps, made after
  // this, still get the semi-space (about 10 MB of the 40 the flag saves at 500 in flight).
  if (launchedSemiSpaceMb() === null) for (const flag of WORKER_NODE_FLAGS) setFlagsFromString(flag);
}

/**
 * How a start line or a report names the settings: `heap growth: 20%; semi-space: 4 MB`; launched without the
 * worker's flags, `semi-space: V8's own on the main thread` and how to launch it.
 */
export function heapGrowthLabel(percent: number, semiSpaceMb = launchedSemiSpaceMb()): string {
  const growth = `heap growth: ${percent > 0 ? `${percent}%` : "V8's own"}`;
  const semiSpace =
    semiSpaceMb === null
      ? `semi-space: V8's own on the main thread, ${WORKER_SEMI_SPACE_MB} MB on the workflow threads ` +
        `(launch with NODE_OPTIONS=${WORKER_NODE_FLAGS.join(' ')} for ${WORKER_SEMI_SPACE_MB} MB throughout)`
      : `semi-space: ${semiSpaceMb} MB`;
  return `${growth}; ${semiSpace}`;
}
