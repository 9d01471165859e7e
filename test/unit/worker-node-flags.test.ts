import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { launchedSemiSpaceMb, WORKER_NODE_FLAGS, workerNodeFlags } from '../../src/infra/worker-node-flags.js';
import { heapGrowthLabel } from '../../src/main/wiring/worker-heap.js';

describe("the worker's Node flags", () => {
  it('reads the semi-space from NODE_OPTIONS and the command line, the command line winning, in either spelling', () => {
    expect(launchedSemiSpaceMb([], undefined)).toBeNull();
    expect(launchedSemiSpaceMb(['--cpu-prof'], '--max-old-space-size=512')).toBeNull();
    expect(launchedSemiSpaceMb([], '--max-old-space-size=512 --max-semi-space-size=8')).toBe(8);
    expect(launchedSemiSpaceMb(['--max_semi_space_size=2'], '--max-semi-space-size=8')).toBe(2);
    expect(launchedSemiSpaceMb(['--max-semi-space-size', '6'], undefined)).toBe(6);
    expect(launchedSemiSpaceMb(['--max-semi-space-size=oops'], undefined)).toBeNull();
  });

  it("launches a worker with the flag unless the operator's NODE_OPTIONS sizes the semi-space itself", () => {
    expect(workerNodeFlags(undefined)).toEqual(['--max-semi-space-size=4']);
    expect(workerNodeFlags('--max-old-space-size=512')).toEqual(['--max-semi-space-size=4']);
    expect(workerNodeFlags('--max-semi-space-size=16')).toEqual([]);
  });

  it('says on the start line what the worker runs with, and how to launch it when the main thread lacks it', () => {
    expect(heapGrowthLabel(20, 4)).toBe('heap growth: 20%; semi-space: 4 MB');
    expect(heapGrowthLabel(0, null)).toBe(
      "heap growth: V8's own; semi-space: V8's own on the main thread, 4 MB on the workflow threads " +
        '(launch with NODE_OPTIONS=--max-semi-space-size=4 for 4 MB throughout)',
    );
  });

  it('are in the image, which compose runs for the worker', () => {
    const env = /^ENV NODE_OPTIONS=(.*)$/m.exec(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8'));
    expect(env?.[1]?.split(' ')).toEqual(expect.arrayContaining([...WORKER_NODE_FLAGS]));
    const compose = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');
    expect(compose, 'compose must not replace the image NODE_OPTIONS').not.toMatch(/NODE_OPTIONS/);
  });
});
