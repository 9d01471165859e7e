import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

/**
 * Replays the recorded history of every workflow the worker registers (test/unit/histories-coverage.test.ts checks
 * that there is one for each) against the current code, the same bundle the worker runs: a change that would break
 * running workflows (non-determinism) fails here. From 1.0 these are the 1.0 histories: a workflow change is made
 * behind patched() and must replay them; they are kept, not re-recorded (CHANGELOG.md, compatibility policy).
 */
const dir = new URL('../histories/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

describe('replay of recorded histories', () => {
  it.each(Object.entries(recorded))('replays %s (%s) deterministically', async (type, workflowId) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(`${type}.json`, dir), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId),
    ).resolves.toBeUndefined();
  });
});
