import { Context } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { keyRevokeWorkflowId } from '../../src/domain/ids.js';
import { keyRevokeStatusQuery } from '../../workflows/keys/key-slot-messages.js';
import { currentWaitQuery } from '../../workflows/waits-messages.js';
import {
  expectLooksWithoutEvents,
  fastWorld,
  historyLength,
  uniqueId,
  waitForStage,
  type FastWorld,
} from '../harness/fast-workflow.js';
import { expectWaitOnEverySurface } from '../harness/wait-surfaces.js';

/** revokeTenantKeySlot's quiet gate with mocked activities: the wait, its bound, the state a continuation carries. */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;
const TARGET = { subaccountId: 'sa_1', generation: 4, keyId: 'key_old', fingerprint: 'fp' };
const USED_BEFORE = '2026-01-01T00:00:00.000Z';

/**
 * The platform's reading of the key: `reading(firstOfRun)` gives it per poll; `firstOfRun` is true on the first
 * poll of each run (a new run id), so a test can make something happen right after a continuation.
 */
function mocks(reading: (firstOfRun: boolean, look: number) => KeyUsage) {
  const calls = { find: 0, observe: 0, revoke: [] as unknown[], runs: new Set<string>() };
  return {
    calls,
    activities: {
      findSlotKeyToRevoke: async () => {
        calls.find += 1;
        return TARGET;
      },
      observeKeyUsage: async () => {
        calls.observe += 1;
        const runId = Context.current().info.workflowExecution?.runId ?? '';
        const firstOfRun = !calls.runs.has(runId);
        calls.runs.add(runId);
        return { [TARGET.keyId]: reading(firstOfRun, calls.observe) };
      },
      revokeSlotKey: async (input: unknown) => {
        calls.revoke.push(input);
        return { keyId: TARGET.keyId, result: 'revoked' as const };
      },
    },
  };
}

const usage = (lastUsedAt: string | null, status: KeyUsage['status'] = 'active', useCount?: number): KeyUsage => ({
  keyId: TARGET.keyId,
  status,
  lastUsedAt,
  lastUseKnown: true,
  ...(useCount === undefined ? {} : { useCount }),
});

/**
 * The record changes at every look in a field the gate does not judge by (its use count moves between two values,
 * its last use does not): each look is judged, and the run's history grows to its bound. Unchanged, the quiet
 * gate's watch looks without adding events (QUIET_GATE_WATCH_PATCH).
 */
const churning = (look: number) => look % 2;

const waitUntil = async (done: () => boolean) => {
  while (!done()) await new Promise((r) => setTimeout(r, 100));
};

async function tenantStatusOf(handle: { describe(): Promise<{ searchAttributes: Record<string, unknown> }> }) {
  return (await handle.describe()).searchAttributes['TenantStatus'];
}

const slowGate = {
  quietPeriod: '1h',
  quietDeadline: '2h',
  pollInterval: '1ms',
  pollCeiling: '1ms',
  historyEventBound: BOUND,
};

// Concurrent: each test has its own task queue, workers, mocks and workflow id, and waits on the dev server far
// more than on a CPU.
describe.concurrent('revokeTenantKeySlot (mocked activities)', () => {
  it('shows the quiet wait, looks without events while nothing changes, bounds its history across continuations while the record changes, and revokes the carried key after them', async () => {
    const ref = uniqueId('t');
    let gone = false;
    let churn = false;
    const { calls, activities } = mocks((_first, look) =>
      gone ? usage(USED_BEFORE, 'revoked') : usage(USED_BEFORE, 'active', churn ? churning(look) : undefined),
    );
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('revokeTenantKeySlot', {
        taskQueue,
        workflowId: keyRevokeWorkflowId(ref, 'ci'),
        args: [{ externalRef: ref, slot: 'ci', options: slowGate }],
      });
      await waitForStage(handle, 'waiting_for_quiet');
      await expectLooksWithoutEvents(handle, () => calls.observe, 30);
      churn = true;
      await waitUntil(() => calls.runs.size >= 3);
      const wait = await handle.query(currentWaitQuery);
      expect(wait).toMatchObject({ stage: 'waiting_for_quiet', decisions: [] });
      expect(wait?.waitingFor).toMatch(/key key_old of slot ci to go unused \(waiting: quiet for \d+ of 3600000 ms\)/);
      expect(wait?.waitingFor).toMatch(/refused \(the key stays active\) on a new use or when not quiet by /);
      expect(await tenantStatusOf(handle)).toEqual(['key_revoke:waiting_for_quiet']);
      await expectWaitOnEverySurface(client, handle, 'waiting_for_quiet', {
        externalRef: ref,
        slot: 'ci',
        tenantStatus: 'key_revoke:waiting_for_quiet',
      });
      // The wait began in the first run and is still the same wait; the poll count goes on.
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
      expect(Date.parse(wait!.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
      const status = await handle.query(keyRevokeStatusQuery);
      expect(status).toMatchObject({ stage: 'waiting_for_quiet', keyId: 'key_old' });
      expect(status.polls).toBeGreaterThan(BOUND / 20);
      gone = true;
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'revoked', keyId: 'key_old', forced: false });
      expect(result.verdict).toMatch(/already revoked or gone/);
      // The key found once, in the first run, is the one revoked after the continuations.
      expect(calls.find).toBe(1);
      expect(calls.revoke).toEqual([expect.objectContaining({ generation: 4, subaccountId: 'sa_1', slot: 'ci' })]);
      expect(await tenantStatusOf(handle)).toEqual(['key_revoke:revoking']);
      for await (const run of client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` }))
        expect(await historyLength(handle, run.runId)).toBeLessThanOrEqual(BOUND + 20);
    });
  }, 120_000);

  it("keeps the gate's memory across a continuation: a use seen first in a new run still refuses the revoke", async () => {
    const ref = uniqueId('t');
    let useNow = false;
    let usedAt = USED_BEFORE;
    const { calls, activities } = mocks((firstOfRun, look) => {
      // The new use shows up on the first reading of a continued run: a run that forgot when its gate
      // began would take it for the starting point and keep waiting.
      if (useNow && firstOfRun) usedAt = new Date().toISOString();
      return usage(usedAt, 'active', usedAt === USED_BEFORE ? churning(look) : undefined);
    });
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('revokeTenantKeySlot', {
        taskQueue,
        workflowId: keyRevokeWorkflowId(ref, 'web'),
        args: [{ externalRef: ref, slot: 'web', options: slowGate }],
      });
      await waitUntil(() => calls.runs.size >= 2);
      useNow = true;
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'refused', keyId: 'key_old' });
      expect(result.verdict).toMatch(/^the key is in use: not revoked/);
      expect(usedAt).not.toBe(USED_BEFORE);
      expect(calls.runs.size).toBeGreaterThanOrEqual(3);
      expect(calls.revoke).toEqual([]);
      expect(await tenantStatusOf(handle)).toEqual(['key_revoke:refused']);
    });
  }, 120_000);

  it('refuses on a use first shown by a later look of its watch, as it does at any look while it waits', async () => {
    const ref = uniqueId('t');
    let usedAt: string | null = null;
    const { calls, activities } = mocks((_first, look) => {
      // Its first reading starts the gate's clock; the use shows from the third look on (the watch's second).
      if (look >= 3) usedAt ??= new Date().toISOString();
      return usage(usedAt ?? USED_BEFORE);
    });
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('revokeTenantKeySlot', {
        taskQueue,
        workflowId: keyRevokeWorkflowId(ref, 'web'),
        args: [
          { externalRef: ref, slot: 'web', options: { quietPeriod: '1h', quietDeadline: '2h', pollInterval: '50ms' } },
        ],
      });
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'refused', keyId: 'key_old' });
      expect(result.verdict).toMatch(/^the key is in use: not revoked/);
      expect(calls.observe).toBeGreaterThanOrEqual(3);
      expect(calls.revoke).toEqual([]);
    });
  });

  it('revokes a key that was never used at once, with no wait', async () => {
    const ref = uniqueId('t');
    const { calls, activities } = mocks(() => usage(null));
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('revokeTenantKeySlot', {
        taskQueue,
        workflowId: keyRevokeWorkflowId(ref, 'ci'),
        args: [{ externalRef: ref, slot: 'ci', options: slowGate }],
      });
      expect(await handle.result()).toMatchObject({ outcome: 'revoked', verdict: 'the old key was never used' });
      expect(calls.observe).toBe(1);
      expect(await tenantStatusOf(handle)).toBeUndefined();
    });
  });
});
