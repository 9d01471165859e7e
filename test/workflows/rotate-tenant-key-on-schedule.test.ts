import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { abortRotationUpdate } from '../../workflows/keys/rotate-tenant-key-messages.js';
import {
  decide,
  fastWorld,
  uniqueId,
  waitForStage,
  type ActivityMocks,
  type FastWorld,
} from '../harness/fast-workflow.js';
import { begunRotation } from '../harness/rotation-begun.js';

/**
 * rotateTenantKeyOnSchedule with mocked activities (its rotateTenantKey child runs on the same mocks): the
 * rotation started as a child under the slot's business id `rotate:<ref>:<slot>` with the launcher's input, its
 * outcome answered (completed, aborted by an operator while held at the key limit), a slot already rotating
 * skipped without a second rotation, a failed rotation failing the launcher, and a refused input starting nothing.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const OLD = 'key_old';
const NEW = 'key_new';
const BEFORE = '2026-01-01T00:00:00.000Z';
const usage = (keyId: string, lastUsedAt: string | null): KeyUsage => ({
  keyId,
  status: 'active',
  lastUsedAt,
  lastUseKnown: true,
});
const fast = { propagationAllowance: '0s', quietPeriod: '300ms', pollInterval: '100ms' };

/** The child rotation's activities: at the key limit when `limit`, refused at begin when `refuse`. */
function mocks(scene: { limit?: boolean; refuse?: boolean }) {
  const begun: Array<{ externalRef: string; slot: string; workflowId: string; reason: unknown }> = [];
  const activities = {
    beginRotation: async (input: { externalRef: string; slot: string; workflowId: string; reason: unknown }) => {
      begun.push({
        externalRef: input.externalRef,
        slot: input.slot,
        workflowId: input.workflowId,
        reason: input.reason,
      });
      if (scene.refuse) throw ApplicationFailure.nonRetryable('no such tenant', 'TENANT_NOT_FOUND');
      return begunRotation(OLD);
    },
    recordRotation: async () => undefined,
    issueTenantKey: async () =>
      scene.limit
        ? {
            state: 'key_limit' as const,
            activeKeys: [{ id: OLD, name: 'default-g1', lastUsedAt: BEFORE, lastUseKnown: true }],
          }
        : { state: 'issued' as const, keyId: NEW, fingerprint: 'fp_new', orphansRevoked: [] },
    deployKeyGeneration: async () => ({ deployed: true }),
    verifyTenantKey: async () => undefined,
    observeKeyUsage: async () => ({ [OLD]: usage(OLD, BEFORE), [NEW]: usage(NEW, null) }),
    revokeKeyGeneration: async () => ({ keyId: OLD, result: 'revoked' as const }),
    revokeNewGeneration: async () => ({ revoked: [NEW], refused: false }),
  } as ActivityMocks;
  return { begun, activities };
}

describe('rotateTenantKeyOnSchedule (mocked activities)', () => {
  it('runs the rotation as a child under the business id and answers its outcome', async () => {
    const ref = uniqueId('sched');
    const { begun, activities } = mocks({});
    await world.run(activities, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('rotateTenantKeyOnSchedule', {
        taskQueue,
        workflowId: uniqueId(`rotate-schedule-${ref}`),
        args: [{ externalRef: ref, slot: 'ci', reason: 'scheduled', options: fast } satisfies RotateTenantKeyInput],
      });
      expect(result).toEqual({ workflowId: rotationWorkflowId(ref, 'ci'), outcome: 'completed' });
      const child = await client.workflow.getHandle(rotationWorkflowId(ref, 'ci')).describe();
      expect(child.type).toBe('rotateTenantKey');
      expect(child.status.name).toBe('COMPLETED');
    });
    expect(begun).toEqual([
      { externalRef: ref, slot: 'ci', workflowId: rotationWorkflowId(ref, 'ci'), reason: 'scheduled' },
    ]);
  }, 30_000);

  it('answers aborted when an operator aborts the rotation it waits for', async () => {
    const ref = uniqueId('sched');
    const { activities } = mocks({ limit: true });
    await world.run(activities, async ({ client, taskQueue }) => {
      const launcher = await client.workflow.start('rotateTenantKeyOnSchedule', {
        taskQueue,
        workflowId: uniqueId(`rotate-schedule-${ref}`),
        args: [{ externalRef: ref, options: { keyLimitRetryInterval: '1h' } } satisfies RotateTenantKeyInput],
      });
      const child = client.workflow.getHandle(rotationWorkflowId(ref, 'default'));
      await waitForStage(child, 'key_limit');
      expect((await launcher.describe()).status.name).toBe('RUNNING');
      await decide(child, abortRotationUpdate, { operator: 'alice', reason: 'not now' });
      expect(await launcher.result()).toEqual({ workflowId: rotationWorkflowId(ref, 'default'), outcome: 'aborted' });
    });
  }, 30_000);

  it('skips a slot already rotating, starting no second rotation', async () => {
    const ref = uniqueId('sched');
    const { begun, activities } = mocks({});
    await world.run(activities, async ({ client, taskQueue }) => {
      // A manual rotation of the slot is under way (a run no worker serves).
      const manual = await client.workflow.start('rotateTenantKey', {
        taskQueue: `${taskQueue}-elsewhere`,
        workflowId: rotationWorkflowId(ref, 'default'),
        args: [{ externalRef: ref }],
      });
      try {
        const result = await client.workflow.execute('rotateTenantKeyOnSchedule', {
          taskQueue,
          workflowId: uniqueId(`rotate-schedule-${ref}`),
          args: [{ externalRef: ref } satisfies RotateTenantKeyInput],
        });
        expect(result).toEqual({ workflowId: rotationWorkflowId(ref, 'default'), outcome: 'skipped_already_running' });
        expect((await manual.describe()).runId).toBe(manual.firstExecutionRunId);
      } finally {
        await manual.terminate('test done');
      }
    });
    expect(begun).toEqual([]);
  }, 30_000);

  it('fails with a rotation that fails, and refuses an input without a ref before starting anything', async () => {
    const ref = uniqueId('sched');
    const { begun, activities } = mocks({ refuse: true });
    await world.run(activities, async ({ client, taskQueue }) => {
      const failing = await client.workflow.start('rotateTenantKeyOnSchedule', {
        taskQueue,
        workflowId: uniqueId(`rotate-schedule-${ref}`),
        args: [{ externalRef: ref } satisfies RotateTenantKeyInput],
      });
      await expect(failing.result()).rejects.toMatchObject({ cause: { name: 'ChildWorkflowFailure' } });
      expect(begun).toHaveLength(1);

      const refused = await client.workflow.start('rotateTenantKeyOnSchedule', {
        taskQueue,
        workflowId: uniqueId('rotate-schedule'),
        args: [{ slot: 'default' }],
      });
      await expect(refused.result()).rejects.toMatchObject({ cause: { type: 'INVALID_INPUT' } });
    });
    expect(begun).toHaveLength(1);
  }, 30_000);
});
