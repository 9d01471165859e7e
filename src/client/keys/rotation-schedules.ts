import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { createOrUpdateSchedule, upsertTenantRotationSchedule } from '../../infra/rotation-schedule.js';
import type { Queryable } from '../../db/pool.js';
import { SCHEDULE_EVERY } from '../schedule-every.js';
import { findTenant, TenantNotFoundError } from '../../db/tenants-store.js';
import { parseCallerInput } from '../../domain/tenant-input.js';
import { carriedFieldsOf } from '../../domain/caller-fields.js';
import { assertTenantAllows, rotationScheduleRefusal } from '../../domain/tenant-rules.js';
import { fleetAdoptionScheduleId, fleetAdoptionWorkflowId, fleetScheduleId } from '../../domain/ids.js';
import {
  rotateFleetInputSchema,
  rotateTenantKeyInputSchema,
  type RotateFleetInput,
  type RotateTenantKeyInput,
} from '../../domain/rotation-input.js';

/**
 * Rotation on Temporal Schedules. Overlap policy SKIP: a schedule never starts a second action while
 * its last one runs (the action waits for the rotation, held ones included), and `run-now` triggers
 * with SKIP too (the SDK's trigger default would allow overlap).
 */
export interface ScheduleTimes {
  /** e.g. `30d` */
  every: string;
  /** e.g. `6h`: each run starts up to this much later, so tenants do not all fire at once. */
  jitter?: string | undefined;
}

function checkTimes(times: ScheduleTimes): void {
  if (!SCHEDULE_EVERY.test(times.every))
    throw new Error(`--every: must be a duration like 12h or 30d (got ${times.every})`);
  if (times.jitter !== undefined && !SCHEDULE_EVERY.test(times.jitter))
    throw new Error(`--jitter: must be a duration like 6h (got ${times.jitter})`);
}

/**
 * With our records (`db`: the gateway passes them), an unknown tenant or one that will never be rotated again
 * (rotationScheduleRefusal) is refused before the schedule is made.
 */
export async function scheduleTenantRotation(
  client: Client,
  rawInput: RotateTenantKeyInput,
  times: ScheduleTimes,
  taskQueue: string,
  db?: Queryable,
) {
  checkTimes(times);
  const input = parseCallerInput(rotateTenantKeyInputSchema, rawInput);
  if (db) {
    const tenant = await findTenant(db, input.externalRef);
    if (!tenant) throw new TenantNotFoundError(input.externalRef);
    assertTenantAllows(rotationScheduleRefusal, tenant);
  }
  return upsertTenantRotationSchedule(
    client,
    { externalRef: input.externalRef, slot: input.slot, rawInput },
    times,
    taskQueue,
  );
}

export async function scheduleFleetRotation(
  client: Client,
  rawInput: RotateFleetInput,
  times: ScheduleTimes,
  taskQueue: string,
) {
  checkTimes(times);
  // A fleet run's cursor and totals are its continuation's, never a caller's (every run would skip tenants).
  const input = parseCallerInput(rotateFleetInputSchema, rawInput, carriedFieldsOf('rotateFleet'));
  // The fleet adoption (imported tenants' unmanaged keys) has its own schedule beside the fleet rotation.
  const scheduleId = input.adopt ? fleetAdoptionScheduleId(input.slot) : fleetScheduleId(input.slot);
  const outcome = await createOrUpdateSchedule(client, {
    scheduleId,
    spec: { intervals: [{ every: times.every }], ...(times.jitter ? { jitter: times.jitter } : {}) },
    action: {
      type: 'startWorkflow',
      workflowType: 'rotateFleet',
      workflowId: input.adopt ? fleetAdoptionWorkflowId(input.slot) : `rotate-fleet:${input.slot}`,
      taskQueue,
      args: [{ ...rawInput, slot: input.slot }],
    },
    policies: { overlap: 'SKIP', catchupWindow: '1h' },
    memo: { kind: input.adopt ? 'fleet-adoption' : 'fleet-rotation', slot: input.slot },
  });
  return { scheduleId, outcome };
}

export interface RotationScheduleView {
  scheduleId: string;
  paused: boolean;
  every: string[];
  nextActionTimes: string[];
  recentActions: number;
}

export async function listRotationSchedules(client: Client): Promise<RotationScheduleView[]> {
  const views: RotationScheduleView[] = [];
  for await (const schedule of client.schedule.list()) {
    if (!schedule.scheduleId.startsWith('rotation:') && !schedule.scheduleId.startsWith('rotation-fleet:')) continue;
    views.push({
      scheduleId: schedule.scheduleId,
      paused: schedule.state.paused,
      every: (schedule.spec?.intervals ?? []).map((i) => `${i.every}ms`),
      nextActionTimes: (schedule.info.nextActionTimes ?? []).slice(0, 1).map((d) => d.toISOString()),
      recentActions: schedule.info.recentActions.length,
    });
  }
  return views.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
}

export type ScheduleCommand = 'pause' | 'unpause' | 'delete' | 'run-now';

export class RotationScheduleNotFoundError extends Error {
  override name = 'RotationScheduleNotFoundError';
}

export async function controlSchedule(
  client: Client,
  scheduleId: string,
  command: ScheduleCommand,
  note = `${command} via tenantctl`,
): Promise<void> {
  const handle = client.schedule.getHandle(scheduleId);
  try {
    if (command === 'pause') await handle.pause(note);
    else if (command === 'unpause') await handle.unpause(note);
    else if (command === 'delete') await handle.delete();
    else await handle.trigger('SKIP');
  } catch (error) {
    if (error instanceof ScheduleNotFoundError)
      throw new RotationScheduleNotFoundError(`no rotation schedule ${scheduleId}`);
    throw error;
  }
}
