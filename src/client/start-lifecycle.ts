import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import {
  InvalidInputError,
  lifecycleInputSchema,
  parseCallerInput,
  type LifecycleRequest,
} from '../domain/tenant-input.js';
import type { DecisionAnswer, DecisionBy } from '../domain/operator-decisions.js';
import { msOf } from '../domain/durations.js';
import { cancelCloseUpdate } from '../../workflows/close-tenant-messages.js';
import { sendDecision } from './send-decision.js';
import { tenantExternalRefKey } from '../domain/search-attributes.js';
import { DEFAULT_TASK_QUEUE } from './start-onboarding.js';
import { lifecycleWorkflowId } from '../domain/ids.js';
import { assertTenantAllows, resumeRefusal } from '../domain/tenant-rules.js';
import type { Queryable } from '../db/pool.js';
import { findTenant, TenantNotFoundError } from '../db/tenants-store.js';
import { findScheduledClose } from '../db/close-schedules-store.js';

export const LifecycleAction = { suspend: 'suspendTenant', resume: 'resumeTenant', close: 'closeTenant' } as const;
export type LifecycleAction = keyof typeof LifecycleAction;

/**
 * Starts suspend / resume / close for a tenant. The id is `<action>:<externalRef>`: a second request
 * while one runs joins it (USE_EXISTING), a later one starts anew (a close of a closed tenant is a
 * no-op success). The input is validated before anything is started.
 *
 * CLOSE_DELAY is the server's default and its minimum: a shorter `after` is refused unless the caller
 * may close sooner (`closeSooner`, the `close.immediate` permission: admins).
 *
 * With our records (`db`: the gateway passes them) a resume the tenant's state refuses (resumeRefusal: closing,
 * or a delayed close waiting out its window) is refused here, before anything starts; a run started without
 * them meets the same rule in its activity.
 */
export async function startLifecycle(
  client: Client,
  action: LifecycleAction,
  rawInput: unknown,
  options: {
    taskQueue?: string;
    closeDelay?: string;
    closeDelayFrom?: string;
    closeSooner?: boolean;
    db?: Queryable;
  } = {},
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  const parsed: LifecycleRequest = parseCallerInput(lifecycleInputSchema, rawInput);
  if (action !== 'close' && parsed.after !== undefined)
    throw new InvalidInputError([`after: only a close takes a delay (not ${action})`]);
  if (action === 'resume' && options.db) await assertResumable(options.db, parsed.externalRef);
  // A close without `after` takes the configured default (CLOSE_DELAY); `0` closes at once.
  const after = action === 'close' ? (parsed.after ?? options.closeDelay) : undefined;
  const minimum = options.closeDelay ?? '0';
  if (after !== undefined && !options.closeSooner && delayMs(after) < delayMs(minimum))
    throw new InvalidInputError([
      `after: must be at least ${minimum} (${options.closeDelayFrom ?? 'CLOSE_DELAY, the server'}'s minimum, ` +
        'which only an admin may undercut)',
    ]);
  const input: LifecycleRequest = { ...parsed, ...(after !== undefined && after !== '0' ? { after } : {}) };
  if (after === '0') delete input.after;
  return client.workflow.start(LifecycleAction[action], {
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: lifecycleWorkflowId(action, input.externalRef),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
  });
}

/** The tenant exists and may be resumed now (the one rule, resumeRefusal). */
async function assertResumable(db: Queryable, externalRef: string): Promise<void> {
  const tenant = await findTenant(db, externalRef);
  if (!tenant) throw new TenantNotFoundError(externalRef);
  const scheduled = await findScheduledClose(db, externalRef);
  assertTenantAllows(resumeRefusal, { ...tenant, scheduledCloseAt: scheduled?.closeAt ?? null });
}

export const delayMs = (value: string) => (value === '0' ? 0 : msOf(value));

/** Undoes a delayed close inside its window: the tenant is back as it was (an Update with a validator). */
export async function cancelClose(client: Client, externalRef: string, by: DecisionBy): Promise<DecisionAnswer> {
  return sendDecision(client, lifecycleWorkflowId('close', externalRef), cancelCloseUpdate, by);
}
