import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

/**
 * Histories recorded before the approval gate (workflows/approval-gate.ts) in which an operator's
 * resolveTransfer verdict was taken, as an Update and as a signal, by onboardTenant, closeTenant and
 * fundTenant: they must replay against the current code, which checks a verdict through an activity
 * only behind patched(). (test/histories/ holds one plain run per workflow, with no decision in it.)
 * Never re-record these: they stand for runs already in flight when the gate was deployed.
 * closeTenant's two were retired when its waits changed (issue 35: visible, bounded, continuing as new):
 * pre-1.0, a close recorded before that change does not replay; approval-gate.test replays a close's
 * gated verdict recorded with the current code.
 */
const dir = new URL('../histories/decisions/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

describe('replay of histories with an operator verdict, recorded before the approval gate', () => {
  it.each(Object.entries(recorded))('replays %s (%s) deterministically', async (name, workflowId) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(`${name}.json`, dir), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId),
    ).resolves.toBeUndefined();
  });
});
