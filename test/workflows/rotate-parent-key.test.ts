import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID } from '../../src/domain/ids.js';
import {
  parentKeyRecordsChangedSignal,
  parentKeyRotationStatusQuery,
} from '../../workflows/keys/rotate-parent-key-messages.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from '../../workflows/keys/rotate-tenant-key-messages.js';
import { currentWaitQuery, type WaitView } from '../../workflows/waits-messages.js';
import {
  BOUND_TEST_RUNS,
  callingRun,
  fastWorld,
  historyLength,
  type FastWorld,
  decide,
} from '../harness/fast-workflow.js';
import { expectWaitOnEverySurface } from '../harness/wait-surfaces.js';
import { sentWithFirstTask } from '../harness/first-task.js';

/**
 * rotateParentKey with mocked activities: every wait visible through currentWait (key_limit, waiting_for_switch,
 * held, naming_old_key, waiting_for_quiet), the old key named among the parent's other keys, revokeAnyway refused
 * while its platform id is unknown, and the history bounded across continuations with a decision after one.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;
const OLD = { rowId: '1', platformKeyId: null, fingerprint: 'sha256:old' };
const NEW = { rowId: '2', platformKeyId: 'key_new', fingerprint: 'sha256:new' };
const by = (reason: string) => ({ operator: 'alice', reason });

/** The world the mocks answer from; a test changes it as the rotation goes. */
interface Scene {
  limit: boolean;
  switched: boolean;
  /** The old key's platform id in our records (null: not named yet). */
  named: string | null;
  usage: KeyUsage;
}

function mocks(scene: Scene) {
  const calls = {
    observeOld: 0,
    /** The runs that looked at the old key. */
    runs: new Set<string>(),
    /** Which looks at the old key may infer it from a single unknown key: only the first, before any change. */
    inferSingle: [] as boolean[],
    switch: 0,
    create: 0,
    revoke: [] as Array<{ platformKeyId: string | null }>,
    rollBack: 0,
  };
  return {
    calls,
    activities: {
      beginParentKeyRotation: async () => ({ old: OLD, newRowId: NEW.rowId, keyName: 'orchestrator-test' }),
      observeOldParentKey: async (input: { inferSingle?: boolean }) => {
        calls.observeOld += 1;
        calls.runs.add(callingRun());
        calls.inferSingle.push(input.inferSingle === true);
        return scene.named
          ? { usage: scene.usage, platformKeyId: scene.named, ambiguous: [] }
          : { usage: null, platformKeyId: null, ambiguous: ['key_ours', 'key_other'] };
      },
      createParentKeyOnPlatform: async () => {
        calls.create += 1;
        return scene.limit
          ? {
              state: 'key_limit' as const,
              activeKeys: [
                { id: 'key_ours', name: 'seed', lastUsedAt: null },
                { id: 'key_other', name: 'billing-service', lastUsedAt: null },
              ],
            }
          : { state: 'created' as const, key: NEW };
      },
      verifyParentKey: async () => ({ requestId: null }),
      makeParentKeyCurrent: async () => undefined,
      observeParentKeySwitch: async () => {
        calls.switch += 1;
        return scene.switched
          ? { live: 2, stragglers: [], pending: [] }
          : {
              live: 2,
              stragglers: ['worker:host-a:41:abc123 (worker)'],
              pending: [
                {
                  processId: 'worker:host-a:41:abc123',
                  kind: 'worker',
                  parentKeyId: OLD.rowId,
                  lastReportAt: '2026-01-01T00:00:00.000Z',
                },
              ],
            };
      },
      revokeOldParentKey: async (input: { platformKeyId: string | null }) => {
        calls.revoke.push(input);
        return { result: 'revoked' as const };
      },
      rollBackParentKeyRotation: async () => {
        calls.rollBack += 1;
        return { rolledBack: true };
      },
    },
  };
}

const inUse = (at: string): KeyUsage => ({
  keyId: 'key_ours',
  status: 'active',
  lastUsedAt: at,
  lastUseKnown: true,
  lastUse: { state: 'seen', at, field: 'lastUsedAt' },
});

async function waitFor(handle: WorkflowHandle, stage: string, also: (w: WaitView) => boolean = () => true) {
  for (let i = 0; i < 600; i += 1) {
    const wait = await handle.query(currentWaitQuery).catch(() => null);
    if (wait?.stage === stage && also(wait)) return wait;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never waited at ${stage}`);
}

/**
 * Sends a decision while the run waits at the key limit. Every poll (2 s) the run leaves the limit for a moment to
 * try the create again, and a decision that arrives then meets `creating_key` and is refused, naming it (a loaded
 * machine took longer than a poll for the checks before it): sent again once the run is back at the limit.
 */
async function atKeyLimit(handle: WorkflowHandle, send: () => Promise<string | null>): Promise<string | null> {
  for (let attempt = 1; ; attempt += 1) {
    await waitFor(handle, 'key_limit');
    const refused = await send();
    if (attempt >= 5 || !refused?.includes('(the run is at creating_key)')) return refused;
  }
}

const refusal = (handle: WorkflowHandle, update: typeof revokeAnywayUpdate, reason = 'try') =>
  decide(handle, update, by(reason)).then(
    () => null,
    (error: { cause?: { message?: string } }) => error.cause?.message ?? String(error),
  );

describe('rotateParentKey (mocked activities)', () => {
  it('shows every wait, names the processes not switched, refuses revokeAnyway while the old id is unknown, and completes once an operator names the old key', async () => {
    const scene: Scene = { limit: true, switched: false, named: null, usage: inUse('2026-01-01T00:00:00.000Z') };
    const { calls, activities } = mocks(scene);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rotateParentKey', {
        taskQueue,
        workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
        args: [
          {
            reason: 'hygiene',
            options: { pollInterval: '2s', switchDeadline: '1s', quietPeriod: '1h' },
          },
        ],
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });

      const limit = await waitFor(handle, 'key_limit');
      expect(limit.waitingFor).toMatch(/active-key limit \(2 active platform keys: seed, billing-service\)/);
      expect(limit.decisions).toEqual(['retryKeyCreate', 'abortRotation', 'escalateToEmergency']);
      await expectWaitOnEverySurface(client, handle, 'key_limit');
      expect(await atKeyLimit(handle, () => refusal(handle, revokeAnywayUpdate))).toMatch(
        /revokeAnyway applies at .* \(the run is at key_limit\)/,
      );
      // Polls every 2 s (stages change only then): the decision is taken at the limit, the next create succeeds.
      expect(await atKeyLimit(handle, () => refusal(handle, retryKeyCreateUpdate, 'revoked an unused key'))).toBeNull();
      scene.limit = false;

      // The switch wait names the processes not yet on the new key, with their last report.
      const switching = await waitFor(handle, 'waiting_for_switch');
      expect(switching.waitingFor).toContain('worker:host-a:41:abc123 (worker, last report 2026-01-01T00:00:00.000Z)');
      // The old key's platform id is unknown (two keys could be it): revokeAnyway cannot apply, and is not offered.
      expect(switching.decisions).toEqual(['abortRotation', 'escalateToEmergency']);
      expect(await refusal(handle, revokeAnywayUpdate)).toMatch(/the old key's platform id is unknown/);
      const held = await waitFor(handle, 'held');
      expect(held.waitingFor).toMatch(/past the switch deadline/);
      expect(held.waitingFor).toContain('worker:host-a:41:abc123');
      await expectWaitOnEverySurface(client, handle, 'held');
      expect((await handle.query(parentKeyRotationStatusQuery)).processes.pending).toHaveLength(1);

      scene.switched = true;
      const naming = await waitFor(handle, 'naming_old_key');
      expect(naming.waitingFor).toMatch(/key_ours, key_other/);
      expect(naming.waitingFor).toMatch(/tenantctl parent-key identify/);
      expect(naming.decisions).toEqual(['abortRotation', 'escalateToEmergency']);
      await expectWaitOnEverySurface(client, handle, 'naming_old_key');
      const refused = await refusal(handle, revokeAnywayUpdate);
      expect(refused).toMatch(/platform id is unknown .*2 active platform keys could be it/);
      expect(refused).toMatch(/parent-key identify/);
      expect((await handle.query(parentKeyRotationStatusQuery)).stage).toBe('naming_old_key');

      // The operator names our key (tenantctl parent-key identify records it, then wakes the run).
      scene.named = 'key_ours';
      await handle.signal(parentKeyRecordsChangedSignal);
      const quiet = await waitFor(handle, 'waiting_for_quiet');
      expect(quiet.waitingFor).toMatch(/platform id key_ours/);
      expect(quiet.decisions).toEqual(['abortRotation', 'revokeAnyway', 'escalateToEmergency']);
      await expectWaitOnEverySurface(client, handle, 'waiting_for_quiet');
      const answer = await decide(handle, revokeAnywayUpdate, by('the gate is too slow today'));
      expect(answer.stage).toBe('waiting_for_quiet');
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'completed', oldKey: { platformKeyId: 'key_ours' }, newKey: NEW });
      // Only our old key was revoked; the other key was never named in a revoke.
      expect(calls.revoke.map((r) => r.platformKeyId)).toEqual(['key_ours']);
      expect(calls.rollBack).toBe(0);
      // Only the first look (made with the old key, before anything changed) may take a single unknown key for
      // the old one; every later look (made with the new key) leaves the naming to an operator.
      expect(calls.inferSingle[0]).toBe(true);
      expect(calls.inferSingle.slice(1)).not.toContain(true);
      expect(calls.inferSingle.length).toBeGreaterThan(1);
      expect(await handle.query(currentWaitQuery)).toBeNull();
    });
  }, 120_000);

  it('bounds a held naming wait across continuations; a decision after one lands and the state carries', async () => {
    const scene: Scene = { limit: false, switched: true, named: null, usage: inUse('2026-01-01T00:00:00.000Z') };
    const { calls, activities } = mocks(scene);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rotateParentKey', {
        taskQueue,
        workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
        args: [{ options: { pollInterval: '1ms', pollCeiling: '1ms', historyEventBound: BOUND } }],
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
      while (calls.runs.size < BOUND_TEST_RUNS) await new Promise((r) => setTimeout(r, 100));
      const wait = await waitFor(handle, 'naming_old_key');
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
      expect(Date.parse(wait.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
      let runs = 0;
      for await (const run of client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) {
        if (run.runId === handle.firstExecutionRunId || run.startTime >= first.startTime) {
          runs += 1;
          expect(await historyLength(handle, run.runId)).toBeLessThanOrEqual(BOUND + 20);
        }
      }
      expect(runs).toBeGreaterThan(1);
      // The new run still refuses revokeAnyway for the unknown id, and takes the emergency decision.
      expect(await refusal(handle, revokeAnywayUpdate)).toMatch(/platform id is unknown/);
      const escalated = await decide(handle, escalateToEmergencyUpdate, by('leaked in a log'));
      expect(escalated.stage).toBe('naming_old_key');
      expect(await refusal(handle, escalateToEmergencyUpdate)).toMatch(/already an emergency/);
      const status = await handle.query(parentKeyRotationStatusQuery);
      expect(status).toMatchObject({ emergency: true, newKey: NEW, oldKey: { rowId: OLD.rowId } });
      expect(status.notes.join()).toMatch(/escalated to emergency by alice/);
      expect(calls.create).toBe(1);

      scene.named = 'key_ours';
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'completed', emergency: true, oldKey: { platformKeyId: 'key_ours' } });
      expect(calls.revoke.map((r) => r.platformKeyId)).toEqual(['key_ours']);
    });
  }, 180_000);

  it('refuses every decision once an abort is accepted, and rolls back', async () => {
    const scene: Scene = { limit: false, switched: false, named: 'key_ours', usage: inUse('2026-01-01T00:00:00.000Z') };
    const { calls, activities } = mocks(scene);
    // The rollback holds until released, so the decisions below reach a run that is still rolling back.
    let release = () => {};
    const released = new Promise<void>((r) => (release = r));
    let rollingBack = false;
    const rollBackParentKeyRotation = async () => {
      rollingBack = true;
      await released;
      return activities.rollBackParentKeyRotation();
    };
    await world.run({ ...activities, rollBackParentKeyRotation }, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rotateParentKey', {
        taskQueue,
        workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
        args: [{ options: { pollInterval: '1h' } }],
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
      const switching = await waitFor(handle, 'waiting_for_switch');
      // The old key's id is known from the start here: revokeAnyway applies.
      expect(switching.decisions).toEqual(['abortRotation', 'revokeAnyway', 'escalateToEmergency']);
      await decide(handle, abortRotationUpdate, by('wrong day'));
      while (!rollingBack) await new Promise((r) => setTimeout(r, 50));
      for (const update of [abortRotationUpdate, revokeAnywayUpdate, escalateToEmergencyUpdate])
        expect(await refusal(handle, update)).toMatch(/being rolled back \(abortRotation by alice\)/);
      release();
      await expect(handle.result()).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/aborted by alice: wrong day/) },
      });
      expect(calls.rollBack).toBe(1);
      expect(calls.revoke).toEqual([]);
    });
  }, 60_000);

  it("takes a decision that comes with the run's first task: its Updates are installed before the input check", async () => {
    const { activities } = mocks({
      limit: true,
      switched: false,
      named: 'key_ours',
      usage: inUse('2026-01-01T00:00:00.000Z'),
    });
    await sentWithFirstTask(
      world.client,
      activities,
      (taskQueue) =>
        world.client.workflow.start('rotateParentKey', {
          taskQueue,
          workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
          args: [{ options: { pollInterval: '1h' } }],
          workflowIdConflictPolicy: 'TERMINATE_EXISTING',
        }),
      (handle) => handle.executeUpdate(escalateToEmergencyUpdate, { args: [by('a leak was found')] }),
      async (handle, answer) => {
        expect(answer).toMatchObject({ status: 'fulfilled', value: { stage: 'creating_key' } });
        expect(await handle.query(parentKeyRotationStatusQuery)).toMatchObject({ emergency: true });
      },
    );
  });

  it("refuses a caller's continued state: only the run's own continuation sets it", async () => {
    const { calls, activities } = mocks({
      limit: false,
      switched: true,
      named: 'key_ours',
      usage: inUse('2026-01-01T00:00:00.000Z'),
    });
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('rotateParentKey', {
        taskQueue,
        workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
        args: [{ continued: { phase: 'quiet', oldPlatformId: 'key_other' } }],
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
      await expect(handle.result()).rejects.toMatchObject({
        // Refused by the run's input check (issue 45), naming the field.
        cause: {
          type: 'INVALID_INPUT',
          message: expect.stringMatching(/continued: set only by a run that continues as new/),
        },
      });
      expect(calls.revoke).toEqual([]);
      expect(calls.create).toBe(0);
    });
  });

  // The Schedule's action (rotateParentKeyOnSchedule) is tested here, in the file of the workflow whose
  // namespace-wide id it starts: tests of one file run one after the other, files side by side.
  it('launches the scheduled rotation as a child under rotate-parent-key, and skips a fire while one runs', async () => {
    const scene: Scene = { limit: true, switched: true, named: 'key_ours', usage: inUse('2026-01-01T00:00:00.000Z') };
    const { calls, activities } = mocks(scene);
    await world.run(activities, async ({ client, taskQueue }) => {
      // A rotation already running (here waiting at the key limit): the launcher starts no second one.
      const running = await client.workflow.start('rotateParentKey', {
        taskQueue,
        workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
        args: [{ options: { pollInterval: '1h' } }],
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
      await waitFor(running, 'key_limit');
      const skipped = await client.workflow.execute('rotateParentKeyOnSchedule', {
        taskQueue,
        workflowId: `parent-key-rotation-fire-${Date.now()}`,
        args: [{ reason: 'scheduled' }],
      });
      expect(skipped).toEqual({ workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID, outcome: 'skipped_already_running' });
      expect(calls.create).toBe(1);
      await running.terminate('the test looked at it');

      // Nothing running: the launcher runs the rotation to its end (an emergency: no quiet gate) and answers it.
      scene.limit = false;
      const before = calls.create;
      const fired = await client.workflow.execute('rotateParentKeyOnSchedule', {
        taskQueue,
        workflowId: `parent-key-rotation-fire-${Date.now()}`,
        args: [{ emergency: true, reason: 'scheduled', options: { pollInterval: '1ms' } }],
      });
      expect(fired).toEqual({ workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID, outcome: 'completed' });
      expect(calls.create).toBeGreaterThan(before);
      expect(calls.revoke).toEqual([expect.objectContaining({ platformKeyId: 'key_ours' })]);
      const child = await client.workflow.getHandle(PARENT_KEY_ROTATION_WORKFLOW_ID).describe();
      expect(child.status.name).toBe('COMPLETED');
    });
  });
});
