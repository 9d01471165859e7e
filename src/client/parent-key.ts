import {
  ScheduleAlreadyRunning,
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type ScheduleOptions,
  type WorkflowHandle,
} from '@temporalio/client';
import { listLiveProcesses, listParentKeys } from '../db/parent-keys-store.js';
import type { Pool } from '../db/pool.js';
import { PARENT_KEY_ROTATION_SCHEDULE_ID, PARENT_KEY_ROTATION_WORKFLOW_ID } from '../domain/ids.js';
import { rotateParentKeyInputSchema, type RotateParentKeyInput } from '../domain/key-slot-input.js';
import { InvalidInputError, parseInput } from '../domain/tenant-input.js';
import type { rotateParentKey } from '../../workflows/rotate-parent-key.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from '../../workflows/rotate-tenant-key-messages.js';
import { SCHEDULE_EVERY } from './rotation-schedules.js';

export interface ParentKeyView {
  /** Our record id: the credential id processes report. */
  id: string;
  platformKeyId: string | null;
  status: string;
  source: string;
  fingerprint: string | null;
  createdAt: string;
  currentSince: string | null;
  revokedAt: string | null;
}

export interface ParentKeysView {
  current: ParentKeyView | null;
  keys: ParentKeyView[];
  /** Processes that reported within `freshMs`, with the key record each uses. */
  processes: Array<{ processId: string; kind: string; parentKeyId: string | null; seenAgoMs: number }>;
}

/** What `tenantctl parent-key show` prints: ids and fingerprints, never a token. */
export async function showParentKeys(pool: Pool, freshMs = 60_000): Promise<ParentKeysView> {
  const [rows, processes] = await Promise.all([listParentKeys(pool), listLiveProcesses(pool, freshMs)]);
  const keys = rows.map((r) => ({
    id: r.id,
    platformKeyId: r.platformKeyId,
    status: r.status,
    source: r.source,
    fingerprint: r.fingerprint,
    createdAt: r.createdAt.toISOString(),
    currentSince: r.currentSince?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }));
  return { current: keys.find((k) => k.status === 'current') ?? null, keys, processes };
}

/** Starts the parent key rotation, or joins the one running (never two at once: one workflow id). */
export async function startParentKeyRotation(
  client: Client,
  rawInput: RotateParentKeyInput | unknown,
  options: { taskQueue: string },
): Promise<WorkflowHandle<typeof rotateParentKey> & { started: boolean }> {
  const input = parseInput(rotateParentKeyInputSchema, rawInput ?? {});
  try {
    const handle = await client.workflow.start<typeof rotateParentKey>('rotateParentKey', {
      taskQueue: options.taskQueue,
      workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return Object.assign(handle, { started: true });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  return Object.assign(client.workflow.getHandle<typeof rotateParentKey>(PARENT_KEY_ROTATION_WORKFLOW_ID), {
    started: false,
  });
}

/** The parent key rotation on a Temporal Schedule (overlap SKIP; the action is the launcher workflow). */
export async function scheduleParentKeyRotation(
  client: Client,
  rawInput: RotateParentKeyInput | unknown,
  every: string,
  taskQueue: string,
): Promise<{ scheduleId: string; outcome: 'created' | 'updated' }> {
  if (!SCHEDULE_EVERY.test(every)) throw new InvalidInputError([`every: must be a duration like 30d (got ${every})`]);
  const input = parseInput(rotateParentKeyInputSchema, rawInput ?? {});
  const options: ScheduleOptions = {
    scheduleId: PARENT_KEY_ROTATION_SCHEDULE_ID,
    spec: { intervals: [{ every }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'rotateParentKeyOnSchedule',
      workflowId: 'rotate-parent-key-scheduled',
      taskQueue,
      args: [input],
    },
    policies: { overlap: 'SKIP', catchupWindow: '1h' },
    memo: { kind: 'parent-key-rotation' },
  };
  try {
    await client.schedule.create(options);
    return { scheduleId: PARENT_KEY_ROTATION_SCHEDULE_ID, outcome: 'created' };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(PARENT_KEY_ROTATION_SCHEDULE_ID).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action as typeof previous.action,
    policies: { ...previous.policies, overlap: 'SKIP' },
  }));
  return { scheduleId: PARENT_KEY_ROTATION_SCHEDULE_ID, outcome: 'updated' };
}

export const PARENT_KEY_DECISIONS = {
  'revoke-anyway': revokeAnywayUpdate,
  abort: abortRotationUpdate,
  'retry-key-create': retryKeyCreateUpdate,
  emergency: escalateToEmergencyUpdate,
} as const;
