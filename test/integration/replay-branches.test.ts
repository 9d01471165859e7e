import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

/**
 * Histories of branches neither the plain recordings (test/histories/) nor the decision recordings reach: a
 * fleet's child rotation that waits out its quiet gate behind patched('fleet-releases-quiet-waits') and tells the
 * fleet (both runs). Recorded by scripts/record-branch-histories.ts; test/unit/branch-histories.test.ts checks
 * each took its branch. They must replay against the current code, so a change to that branch fails here.
 */
const dir = new URL('../histories/branches/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

describe('replay of histories of a branch the plain recordings miss', () => {
  it.each(Object.entries(recorded))('replays %s (%s) deterministically', async (name, workflowId) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(`${name}.json`, dir), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId),
    ).resolves.toBeUndefined();
  });
});
