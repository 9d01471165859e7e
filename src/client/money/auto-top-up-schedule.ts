import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client } from '@temporalio/client';
import { autoTopUpSweepInputSchema, type AutoTopUpSweepInput } from '../../domain/funding-policy-input.js';
import { parseCallerInput } from '../../domain/tenant-input.js';
import { carriedFieldsOf } from '../../domain/caller-fields.js';
import { AUTO_TOP_UP_SCHEDULE_ID, autoTopUpSweepWorkflowId } from '../../domain/ids.js';
import { SCHEDULE_EVERY } from '../schedule-every.js';

/**
 * The auto top-up sweep on a Temporal Schedule (overlap SKIP: a sweep still running when the next
 * is due is not doubled; racing sweeps started by hand are safe anyway, see autoTopUpSweep).
 */
export async function scheduleAutoTopUp(
  client: Client,
  rawInput: AutoTopUpSweepInput,
  every: string,
  taskQueue: string,
): Promise<{ scheduleId: string; outcome: 'created' | 'updated' }> {
  if (!SCHEDULE_EVERY.test(every)) throw new Error(`--every: must be a duration like 15m or 1h (got ${every})`);
  // The sweep's cursor and totals are its continuation's, never a caller's (every run would skip tenants).
  parseCallerInput(autoTopUpSweepInputSchema, rawInput, carriedFieldsOf('autoTopUpSweep'));
  const spec = { intervals: [{ every }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'autoTopUpSweep',
    workflowId: autoTopUpSweepWorkflowId(),
    taskQueue,
    args: [rawInput],
  };
  try {
    await client.schedule.create({
      scheduleId: AUTO_TOP_UP_SCHEDULE_ID,
      spec,
      action,
      policies: { overlap: 'SKIP', catchupWindow: '1h' },
      memo: { kind: 'auto-top-up' },
    });
    return { scheduleId: AUTO_TOP_UP_SCHEDULE_ID, outcome: 'created' };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(AUTO_TOP_UP_SCHEDULE_ID).update((previous) => ({
    ...previous,
    spec,
    action: action as typeof previous.action,
    policies: { ...previous.policies, overlap: 'SKIP' },
  }));
  return { scheduleId: AUTO_TOP_UP_SCHEDULE_ID, outcome: 'updated' };
}

export async function controlAutoTopUpSchedule(
  client: Client,
  command: 'delete' | 'run-now' | 'describe',
): Promise<unknown> {
  const handle = client.schedule.getHandle(AUTO_TOP_UP_SCHEDULE_ID);
  try {
    if (command === 'delete') return await handle.delete();
    if (command === 'run-now') return await handle.trigger('SKIP');
    const d = await handle.describe();
    return {
      scheduleId: AUTO_TOP_UP_SCHEDULE_ID,
      paused: d.state.paused,
      nextActionTimes: (d.info.nextActionTimes ?? []).slice(0, 1).map((t) => t.toISOString()),
      recentActions: d.info.recentActions.length,
    };
  } catch (error) {
    if (error instanceof ScheduleNotFoundError)
      throw new Error(
        `no auto top-up schedule (${AUTO_TOP_UP_SCHEDULE_ID}): create it with \`tenantctl funding schedule create\``,
        { cause: error },
      );
    throw error;
  }
}
