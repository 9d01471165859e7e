import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { escalateToEmergencyUpdate, rotationStatusQuery } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { decide, fastWorld, uniqueId, until, type FastWorld } from '../harness/fast-workflow.js';
import { begunRotation } from '../harness/rotation-begun.js';

/**
 * What one rotation costs Temporal (issue 49): its history events, workflow tasks, activities and search-attribute
 * upserts, run as the fleet bench runs it (quiet period 0, no allowance: the gate passes at its first look), alone
 * and as the child of the scheduled launcher. Before `rotation-fewer-round-trips`: 46 events, 6 tasks, 5 activities
 * (the verify and the look apart) and 7 upserts alone (TenantExternalRef in an upsert of its own); as a child 51
 * events and 7 tasks (a signal of the end the launcher never reads), the launcher 19 events and 4 tasks. After: 41
 * events (the patch's marker and TemporalChangeVersion upsert among them), 5 tasks, 4 activities.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const EventType = temporal.api.enums.v1.EventType;
const OLD = 'key_old';
const NEW = 'key_new';
const RECENT = new Date(Date.now() - 1000).toISOString();
const usage = (keyId: string, lastUsedAt: string | null): KeyUsage => ({
  keyId,
  status: 'active',
  lastUsedAt,
  lastUseKnown: true,
});

function mocks(oldLastUse: string | null = null, verifyGate: Promise<void> | null = null) {
  const calls = { verify: 0, observe: 0, revoked: [] as string[] };
  const activities = {
    beginRotation: async () => begunRotation(OLD),
    recordRotation: async () => undefined,
    issueTenantKey: async () => ({ state: 'issued' as const, keyId: NEW, fingerprint: 'fp_new', orphansRevoked: [] }),
    deployKeyGeneration: async () => ({ deployed: true }),
    verifyTenantKey: async () => {
      calls.verify += 1;
      if (verifyGate) await verifyGate;
      return { verified: true as const, requestId: null };
    },
    observeKeyUsage: async () => {
      calls.observe += 1;
      return { [OLD]: usage(OLD, oldLastUse), [NEW]: usage(NEW, null) };
    },
    revokeKeyGeneration: async (input: { why: string }) => {
      calls.revoked.push(input.why);
      return { keyId: OLD, result: 'revoked' as const };
    },
  } as never;
  return { calls, activities };
}

async function costOf(world: FastWorld, workflowId: string) {
  const events = (await world.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const of = (type: temporal.api.enums.v1.EventType) => events.filter((e) => e.eventType === type);
  return {
    events: events.length,
    tasks: of(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length,
    activities: of(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name,
    ),
    upserts: of(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES).map((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).sort(),
    ),
    signalsSent: of(EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED).length,
    signalsReceived: of(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length,
  };
}

const options = { quietPeriod: '0s', propagationAllowance: '0s', pollInterval: '1s' };

describe('one rotation in Temporal (issue 49)', () => {
  it('verifies the new key and takes the gate first look in one activity; TenantExternalRef with the first status', async () => {
    const { calls, activities } = mocks();
    await world.run(activities, async ({ client, taskQueue }) => {
      const ref = uniqueId('rot');
      const workflowId = rotationWorkflowId(ref, 'default');
      const args = [{ externalRef: ref, options } satisfies RotateTenantKeyInput];
      await expect(client.workflow.execute('rotateTenantKey', { taskQueue, workflowId, args })).resolves.toMatchObject({
        outcome: 'completed',
        quietCheck: { method: 'last-use', verdict: 'the old key was never used' },
      });
      const cost = await costOf(world, workflowId);
      expect(cost.activities).toEqual([
        'issueTenantKey',
        'deployKeyGeneration',
        'verifyKeyAndObserveUsage',
        'revokeKeyGeneration',
      ]);
      // The patch's own TemporalChangeVersion upsert (the SDK's) comes first.
      expect(cost.upserts[0]).toEqual(['TemporalChangeVersion']);
      expect(cost.upserts[1]).toEqual(['TenantExternalRef', 'TenantStatus']);
      expect(cost.upserts.length).toBe(7);
      expect(cost.tasks).toBeLessThanOrEqual(5);
      expect(cost.events).toBeLessThanOrEqual(41);
      // One proof and one look, both through the one activity.
      expect(calls).toMatchObject({ verify: 1, observe: 1, revoked: ['quiet'] });
    });
  });

  it('tells its launcher no end the launcher never reads: no signal, no workflow task for it', async () => {
    await world.run(mocks().activities, async ({ client, taskQueue }) => {
      const ref = uniqueId('rot');
      const launcherId = uniqueId('sched');
      const args = [{ externalRef: ref, options } satisfies RotateTenantKeyInput];
      await client.workflow.execute('rotateTenantKeyOnSchedule', { taskQueue, workflowId: launcherId, args });
      const child = await costOf(world, rotationWorkflowId(ref, 'default'));
      const launcher = await costOf(world, launcherId);
      expect(child.signalsSent).toBe(0);
      expect(launcher.signalsReceived).toBe(0);
      expect(child.tasks).toBeLessThanOrEqual(5);
      expect(launcher.events).toBeLessThanOrEqual(15);
    });
  });

  it('an escalation that lands while the verify-and-look runs decides the gate: the look is not judged', async () => {
    let release!: () => void;
    // The old key was used a second ago: judged, the first look would wait out the quiet period (1 h).
    const { calls, activities } = mocks(RECENT, new Promise<void>((r) => (release = r)));
    await world.run(activities, async ({ client, taskQueue }) => {
      const ref = uniqueId('rot');
      const handle = await client.workflow.start('rotateTenantKey', {
        taskQueue,
        workflowId: rotationWorkflowId(ref, 'default'),
        args: [{ externalRef: ref, options: { ...options, quietPeriod: '1h' } } satisfies RotateTenantKeyInput],
      });
      await until(async () => (await handle.query(rotationStatusQuery)).stage === 'verifying' && calls.verify === 1);
      await decide(handle, escalateToEmergencyUpdate, { operator: 'alice', reason: 'leaked' });
      release();
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'completed' });
      expect(calls).toMatchObject({ verify: 1, observe: 1, revoked: ['emergency rotation'] });
    });
  });
});
