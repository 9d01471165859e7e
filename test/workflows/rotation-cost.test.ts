import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { fastWorld, uniqueId, type FastWorld } from '../harness/fast-workflow.js';

/**
 * What one rotation costs Temporal (issue 49): its history events, workflow tasks and search-attribute upserts,
 * run as the fleet bench runs it (quiet period 0, no allowance: the gate passes at its first look), alone and as
 * the child of the scheduled launcher. Before the change: 51 events, 7 tasks and 7 upserts as a child, the
 * launcher 19 events and 4 tasks (a signal of the end it never reads).
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const EventType = temporal.api.enums.v1.EventType;
const OLD = 'key_old';
const NEW = 'key_new';
const usage = (keyId: string): KeyUsage => ({ keyId, status: 'active', lastUsedAt: null, lastUseKnown: true });

const activities = {
  beginRotation: async () => ({
    rotationId: 'rot_1',
    subaccountId: 'sa_1',
    fromGeneration: 1,
    toGeneration: 2,
    oldKeyId: OLD,
    oldFingerprint: 'fp_old',
    deployer: { kind: 'notify' as const },
    adopted: false,
  }),
  recordRotation: async () => undefined,
  issueTenantKey: async () => ({ state: 'issued' as const, keyId: NEW, fingerprint: 'fp_new', orphansRevoked: [] }),
  deployKeyGeneration: async () => ({ deployed: true }),
  verifyTenantKey: async () => undefined,
  observeKeyUsage: async () => ({ [OLD]: usage(OLD), [NEW]: usage(NEW) }),
  revokeKeyGeneration: async () => ({ keyId: OLD, result: 'revoked' as const }),
} as never;

async function costOf(world: FastWorld, workflowId: string) {
  const events = (await world.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const of = (type: temporal.api.enums.v1.EventType) => events.filter((e) => e.eventType === type);
  return {
    events: events.length,
    tasks: of(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length,
    upserts: of(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES).map((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).sort(),
    ),
    signalsSent: of(EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED).length,
    signalsReceived: of(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length,
  };
}

const options = { quietPeriod: '0s', propagationAllowance: '0s', pollInterval: '1s' };

describe('one rotation in Temporal (issue 49)', () => {
  it('sets TenantExternalRef with its first TenantStatus, in one upsert', async () => {
    await world.run(activities, async ({ client, taskQueue }) => {
      const ref = uniqueId('rot');
      const workflowId = rotationWorkflowId(ref, 'default');
      const args = [{ externalRef: ref, options } satisfies RotateTenantKeyInput];
      await client.workflow.execute('rotateTenantKey', { taskQueue, workflowId, args });
      const cost = await costOf(world, workflowId);
      // The patch's own marker and TemporalChangeVersion upsert (the SDK's) are in these figures.
      expect(cost.upserts[0]).toEqual(['TemporalChangeVersion']);
      expect(cost.upserts[1]).toEqual(['TenantExternalRef', 'TenantStatus']);
      expect(cost.upserts.length).toBeLessThanOrEqual(7);
      expect(cost.tasks).toBeLessThanOrEqual(6);
      expect(cost.events).toBeLessThanOrEqual(47);
    });
  });

  it('tells its launcher no end the launcher never reads: no signal, no workflow task for it', async () => {
    await world.run(activities, async ({ client, taskQueue }) => {
      const ref = uniqueId('rot');
      const launcherId = uniqueId('sched');
      const args = [{ externalRef: ref, options } satisfies RotateTenantKeyInput];
      await client.workflow.execute('rotateTenantKeyOnSchedule', { taskQueue, workflowId: launcherId, args });
      const child = await costOf(world, rotationWorkflowId(ref, 'default'));
      const launcher = await costOf(world, launcherId);
      expect(child.signalsSent).toBe(0);
      expect(launcher.signalsReceived).toBe(0);
      expect(child.tasks).toBeLessThanOrEqual(6);
      expect(child.events).toBeLessThanOrEqual(47);
      expect(launcher.events).toBeLessThanOrEqual(15);
    });
  });
});
