import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

/**
 * Histories in which an operator's decision reached the run as an Update (test/histories/ holds one plain
 * run per workflow, with no decision in it): onboardTenant and fundTenant taking a resolveTransfer verdict
 * through the approval gate (workflows/approval-gate.ts), and fundTenant taking parentFunded. Recorded
 * from the 1.0 code by scripts/record-decision-histories.ts; they must replay against the current code, so
 * a change to a decision path that would break runs waiting for a decision fails here.
 */
const dir = new URL('../histories/decisions/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

describe('replay of histories with an operator decision', () => {
  it.each(Object.entries(recorded))('replays %s (%s) deterministically', async (name, workflowId) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(`${name}.json`, dir), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId),
    ).resolves.toBeUndefined();
  });
});
