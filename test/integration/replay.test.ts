import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import * as workflows from '../../workflows/index.js';

/**
 * Replays a recorded history of every production workflow against the current code (the same
 * bundle the worker runs): a change that would break running workflows (non-determinism) fails
 * here. After a deliberate, versioned change, re-record with `npm run histories:record`.
 */
const dir = new URL('../histories/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

describe('replay of recorded histories', () => {
  it('has a recorded history for each workflow the worker runs', () => {
    // The schedules' launchers only start rotateTenantKey / rotateParentKey with the schedule's input.
    const thinWrappers = ['rotateTenantKeyOnSchedule', 'rotateParentKeyOnSchedule'];
    const production = Object.keys(workflows).filter((name) => !thinWrappers.includes(name));
    expect(Object.keys(recorded).sort()).toEqual(production.sort());
  });

  it.each(Object.entries(recorded))('replays %s (%s) deterministically', async (type, workflowId) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(`${type}.json`, dir), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId),
    ).resolves.toBeUndefined();
  });
});
