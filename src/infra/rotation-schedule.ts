import { ScheduleAlreadyRunning, type Client, type ScheduleOptions } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { rotationScheduleId } from '../domain/ids.js';
import type { RotateTenantKeyInput } from '../domain/rotation-input.js';
import { tenantExternalRefKey } from '../domain/search-attributes.js';

/**
 * One tenant slot's rotation Schedule, made or brought up to date: the one definition both `tenantctl
 * schedule-rotation` (src/client/keys/rotation-schedules.ts) and an onboarding by plan (activities/plan.ts)
 * use, so a schedule is the same whichever made it. Idempotent: a second call updates the first's.
 * Overlap policy SKIP (a schedule never starts a second rotation while one runs).
 */
export async function createOrUpdateSchedule(client: Client, options: ScheduleOptions): Promise<'created' | 'updated'> {
  try {
    await client.schedule.create(options);
    return 'created';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(options.scheduleId).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action as typeof previous.action,
    policies: { ...previous.policies, overlap: 'SKIP' },
  }));
  return 'updated';
}

/** `input`: checked already (its slot the parsed one); `rawInput` is what each scheduled run is started with. */
export async function upsertTenantRotationSchedule(
  client: Client,
  input: { externalRef: string; slot: string; rawInput: RotateTenantKeyInput },
  times: { every: string; jitter?: string | undefined },
  taskQueue: string,
): Promise<{ scheduleId: string; outcome: 'created' | 'updated' }> {
  const { externalRef, slot } = input;
  const scheduleId = rotationScheduleId(externalRef, slot);
  const outcome = await createOrUpdateSchedule(client, {
    scheduleId,
    spec: { intervals: [{ every: times.every }], ...(times.jitter ? { jitter: times.jitter } : {}) },
    action: {
      type: 'startWorkflow',
      workflowType: 'rotateTenantKeyOnSchedule',
      workflowId: `rotate-scheduled:${externalRef}:${slot}`,
      taskQueue,
      args: [{ ...input.rawInput, slot }],
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]),
    },
    policies: { overlap: 'SKIP', catchupWindow: '1h' },
    memo: { kind: 'tenant-rotation', externalRef, slot },
  });
  return { scheduleId, outcome };
}
