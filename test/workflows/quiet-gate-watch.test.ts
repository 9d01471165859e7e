import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { QUIET_GATE_WATCH_PATCH } from '../../workflows/keys/quiet-watch.js';
import {
  escalateToEmergencyUpdate,
  revokeAnywayUpdate,
  rotationStatusQuery,
} from '../../workflows/keys/rotate-tenant-key-messages.js';
import { decide, fastWorld, until, uniqueId, waitForStage, type FastWorld } from '../harness/fast-workflow.js';
import { eventNames, localActivityMarkersFollowedByCommands, splitTaskAfter } from '../harness/history-split.js';
import { begunRotation } from '../harness/rotation-begun.js';

/**
 * The quiet gate's watch (QUIET_GATE_WATCH_PATCH) on the dev server with mocked activities: the looks are one
 * activity's retries (the server's own, after the `nextRetryDelay` each attempt asks for), and what the gate
 * judges from them is what the timers' looks gave it: the verdict when it can change, a late use by the look
 * before it, a decision at once.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const OLD = 'key_old';
const NEW = 'key_new';
const BEFORE_DEPLOY = '2026-01-01T00:00:00.000Z';

function mocks(w: { oldLastUse: string | null }) {
  const calls = { observe: 0, revoked: [] as string[] };
  const usage = (keyId: string, lastUsedAt: string | null): KeyUsage => ({
    keyId,
    status: 'active',
    lastUsedAt,
    lastUseKnown: true,
  });
  return {
    calls,
    activities: {
      beginRotation: async () => begunRotation(OLD),
      recordRotation: async () => undefined,
      issueTenantKey: async () => ({ state: 'issued' as const, keyId: NEW, fingerprint: 'fp_new', orphansRevoked: [] }),
      deployKeyGeneration: async () => ({ deployed: true }),
      verifyTenantKey: async () => ({ verified: true as const, requestId: null }),
      observeKeyUsage: async () => {
        calls.observe += 1;
        // The new key is not seen in use: the gate measures on the workflow's clock.
        return { [OLD]: usage(OLD, w.oldLastUse), [NEW]: usage(NEW, null) };
      },
      revokeKeyGeneration: async (input: { why: string }) => {
        calls.revoked.push(input.why);
        return { keyId: OLD, result: 'revoked' as const };
      },
    } as never,
  };
}

const start = (client: FastWorld['client'], taskQueue: string, options: RotateTenantKeyInput['options']) => {
  const ref = uniqueId('watch');
  return client.workflow.start('rotateTenantKey', {
    taskQueue,
    workflowId: rotationWorkflowId(ref, 'default'),
    args: [{ externalRef: ref, options } satisfies RotateTenantKeyInput],
  });
};

const replay = (history: Parameters<typeof Worker.runReplayHistory>[1], workflowId: string) =>
  Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);

describe.concurrent('the quiet gate watch (mocked activities, real server retries)', () => {
  it('passes when the verdict can change, not at the next poll: quiet period 2 s, poll interval 1 h', async () => {
    const { calls, activities } = mocks({ oldLastUse: BEFORE_DEPLOY });
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, {
        propagationAllowance: '0s',
        quietPeriod: '2s',
        pollInterval: '1h',
      });
      const waiting = await waitForStage(handle, 'waiting_for_quiet');
      expect(waiting.waitingFor).toMatch(
        /^waiting: quiet for \d+ of 2000 ms; next look in \d+ ms, then backing off; judged again when the key's use changes, or at \S+ when the verdict can change by time$/,
      );
      await expect(handle.result()).resolves.toMatchObject({
        outcome: 'completed',
        quietCheck: { verdict: expect.stringMatching(/^no use for \d+ ms \(quiet period 2000 ms\)$/) },
      });
      // The verify-and-look, and the watch's one look when the quiet period had passed.
      expect(calls).toEqual({ observe: 2, revoked: ['quiet'] });
      const names = eventNames(await handle.fetchHistory());
      expect(names.filter((n) => n === 'TIMER_STARTED')).toEqual([]);
      expect(names.filter((n) => n === 'core_patch')).toHaveLength(2);
    });
  });

  it('costs one workflow task however many looks see nothing new: ten looks in 2 s, every 200 ms', async () => {
    const { calls, activities } = mocks({ oldLastUse: BEFORE_DEPLOY });
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, {
        propagationAllowance: '0s',
        quietPeriod: '2s',
        pollInterval: '200ms',
      });
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'completed' });
      expect(calls.observe).toBeGreaterThanOrEqual(8);
      const names = eventNames(await handle.fetchHistory());
      // As a rotation whose gate passes at its first look (rotation-cost.test.ts: 5 tasks), and one task for the
      // watch's answer: with a timer per look it was two tasks a look.
      expect(names.filter((n) => n === 'WORKFLOW_TASK_COMPLETED').length).toBeLessThanOrEqual(6);
      expect(names.filter((n) => n === 'ACTIVITY_TASK_SCHEDULED')).toHaveLength(5);
    });
  });

  const decisions = [
    {
      name: 'revokeAnyway lands',
      send: (handle: WorkflowHandle) =>
        decide(handle, revokeAnywayUpdate, { operator: 'alice', reason: 'consumer confirmed gone' }),
      why: 'revoked anyway by alice: consumer confirmed gone',
    },
    {
      name: 'an escalation revokes at once',
      send: (handle: WorkflowHandle) =>
        decide(handle, escalateToEmergencyUpdate, { operator: 'alice', reason: 'leaked' }),
      why: 'emergency rotation',
    },
  ];
  it.each(decisions)(
    'a decision ends the watch at once, between two looks: $name, nothing more looked at',
    async (d) => {
      const { calls, activities } = mocks({ oldLastUse: BEFORE_DEPLOY });
      await world.run(activities, async ({ client, taskQueue }) => {
        const handle = await start(client, taskQueue, {
          propagationAllowance: '0s',
          quietPeriod: '1h',
          pollInterval: '1h',
        });
        await waitForStage(handle, 'waiting_for_quiet');
        const looks = calls.observe;
        await d.send(handle);
        await expect(handle.result()).resolves.toMatchObject({ outcome: 'completed' });
        expect(calls.revoked).toEqual([d.why]);
        expect(calls.observe).toBe(looks);
        expect(eventNames(await handle.fetchHistory())).toContain('ACTIVITY_TASK_CANCEL_REQUESTED');
      });
    },
  );

  it('judges a late use by the look before it (a watch answers as the allowance ends); the history replays, split or not', async () => {
    const w = { oldLastUse: BEFORE_DEPLOY as string | null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, {
        propagationAllowance: '1s',
        quietPeriod: '1h',
        pollInterval: '200ms',
        pollCeiling: '200ms',
      });
      await waitForStage(handle, 'waiting_for_quiet');
      const deployedAt = Date.parse((await handle.query(rotationStatusQuery)).deployedAt!);
      // Looks that saw no use until well after the allowance: the use first seen now happened after it. A watch that
      // began before the allowance ended and went on past it would judge it by a look before (not late).
      await until(() => calls.observe >= 12 && Date.now() > deployedAt + 2_500);
      w.oldLastUse = new Date().toISOString();
      await waitForStage(handle, 'held');
      const status = await handle.query(rotationStatusQuery);
      expect(status.heldReason).toBe('used_after_allowance');
      expect(status.quietCheck?.polls).toBeGreaterThanOrEqual(12);
      await decide(handle, revokeAnywayUpdate, { operator: 'alice', reason: 'consumer confirmed gone' });
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'completed' });

      const history = await handle.fetchHistory();
      expect(eventNames(history).filter((n) => n === 'ACTIVITY_TASK_SCHEDULED').length).toBeLessThan(8);
      await expect(replay(history, handle.workflowId)).resolves.toBeUndefined();
      // A workflow task completed right after a local activity's marker (Core's task heartbeat under load) must
      // replay too: the patch is asked in the activation a look's answer started, after no local activity.
      const splits = localActivityMarkersFollowedByCommands(history);
      expect(splits.length).toBeGreaterThan(0);
      for (const index of splits)
        await expect(
          replay(splitTaskAfter(history, index), handle.workflowId),
          `split after ${index + 1}`,
        ).resolves.toBeUndefined();
    });
  });

  it('names its patch as the CHANGELOG does', () => {
    expect(QUIET_GATE_WATCH_PATCH).toBe('quiet-gate-watch');
  });
});
