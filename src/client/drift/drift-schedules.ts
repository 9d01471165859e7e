import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client } from '@temporalio/client';
import { parseInput } from '../../domain/tenant-input.js';
import { SCHEDULE_EVERY } from '../schedule-every.js';
import { DRIFT_SCHEDULE_ID } from '../../domain/ids.js';
import { reconcileFleetInputSchema, type ReconcileFleetInput } from '../../domain/drift-input.js';

/**
 * The fleet drift check on a Temporal Schedule: hourly by default (DRIFT_SCHEDULE_EVERY), overlap
 * policy SKIP (a check still running when the next is due is not doubled), `run-now` with SKIP too.
 */
export class DriftScheduleNotFoundError extends Error {
  override name = 'DriftScheduleNotFoundError';
}

export async function scheduleDriftCheck(
  client: Client,
  rawInput: ReconcileFleetInput,
  times: { every: string; jitter?: string | undefined },
  taskQueue: string,
) {
  if (!SCHEDULE_EVERY.test(times.every))
    throw new Error(`--every: must be a duration like 1h or 30m (got ${times.every})`);
  if (times.jitter !== undefined && !SCHEDULE_EVERY.test(times.jitter))
    throw new Error(`--jitter: must be a duration like 5m (got ${times.jitter})`);
  const input = parseInput(reconcileFleetInputSchema, rawInput);
  if (input.externalRef) throw new Error('a scheduled drift check covers the whole fleet: no tenant');
  const spec = { intervals: [{ every: times.every }], ...(times.jitter ? { jitter: times.jitter } : {}) };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'reconcileFleet',
    workflowId: 'drift-scheduled',
    taskQueue,
    args: [rawInput],
  };
  try {
    await client.schedule.create({
      scheduleId: DRIFT_SCHEDULE_ID,
      spec,
      action,
      policies: { overlap: 'SKIP', catchupWindow: '1h' },
      memo: { kind: 'drift-check' },
    });
    return { scheduleId: DRIFT_SCHEDULE_ID, outcome: 'created' as const };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(DRIFT_SCHEDULE_ID).update((previous) => ({
    ...previous,
    spec,
    action: action as typeof previous.action,
    policies: { ...previous.policies, overlap: 'SKIP' },
  }));
  return { scheduleId: DRIFT_SCHEDULE_ID, outcome: 'updated' as const };
}

export async function describeDriftSchedule(client: Client) {
  try {
    const d = await client.schedule.getHandle(DRIFT_SCHEDULE_ID).describe();
    return {
      scheduleId: DRIFT_SCHEDULE_ID,
      paused: d.state.paused,
      every: (d.spec.intervals ?? []).map((i) => `${String(i.every)}ms`),
      nextActionTimes: (d.info.nextActionTimes ?? []).slice(0, 1).map((t) => t.toISOString()),
      recentActions: d.info.recentActions.length,
    };
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return null;
    throw error;
  }
}

export async function controlDriftSchedule(
  client: Client,
  command: 'pause' | 'unpause' | 'delete' | 'run-now',
): Promise<void> {
  const handle = client.schedule.getHandle(DRIFT_SCHEDULE_ID);
  try {
    if (command === 'pause') await handle.pause('pause via tenantctl');
    else if (command === 'unpause') await handle.unpause('unpause via tenantctl');
    else if (command === 'delete') await handle.delete();
    else await handle.trigger('SKIP');
  } catch (error) {
    if (error instanceof ScheduleNotFoundError)
      throw new DriftScheduleNotFoundError(
        `no drift schedule (${DRIFT_SCHEDULE_ID}): create it with \`tenantctl drift schedule create\``,
      );
    throw error;
  }
}
