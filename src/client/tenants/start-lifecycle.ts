import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import {
  InvalidInputError,
  lifecycleAfterProblem,
  lifecycleInputSchema,
  parseCallerInput,
  type LifecycleRequest,
} from '../../domain/tenant-input.js';
import type { DecisionAnswer, DecisionBy } from '../../domain/operator-decisions.js';
import { closeDelayMinimumProblem, closeDelayMs } from '../../domain/durations.js';
import { CLOSE_SOONER_RULE } from '../../domain/caller-fields.js';
import { sealCloseSoonerGrant } from '../../secrets/close-sooner-grant.js';
import type { Vault } from '../../secrets/vault.js';
import { cancelCloseUpdate } from '../../../workflows/close-tenant-messages.js';
import { sendDecision } from '../send-decision.js';
import { tenantExternalRefKey } from '../../domain/search-attributes.js';
import { DEFAULTS } from '../../config/defaults.js';
import { lifecycleWorkflowId } from '../../domain/ids.js';
import { assertTenantAllows, resumeBalanceRefusal, resumeRefusal, suspendRefusal } from '../../domain/tenant-rules.js';
import type { Queryable } from '../../db/pool.js';
import { findTenant, TenantNotFoundError, type TenantRow } from '../../db/tenants-store.js';
import { findScheduledClose } from '../../db/close-schedules-store.js';
import { resumeFloorFor } from '../../db/plan-state.js';
import { PlatformError, type PlatformClient } from '../../platform/index.js';

export const LifecycleAction = { suspend: 'suspendTenant', resume: 'resumeTenant', close: 'closeTenant' } as const;
export type LifecycleAction = keyof typeof LifecycleAction;

/**
 * Starts suspend / resume / close for a tenant. The id is `<action>:<externalRef>`: a second request
 * while one runs joins it (USE_EXISTING), a later one starts anew (a close of a closed tenant is a
 * no-op success). The input is validated before anything is started.
 *
 * CLOSE_DELAY is the server's default and its minimum: a shorter `after` is refused unless the caller
 * may close sooner (`closeSooner`, the `close.immediate` permission: admins). The run holds its start to the
 * same minimum (activities/input-validation.ts), so an admin's sooner close carries the server's sealed word for
 * it (`vault`: src/secrets/close-sooner-grant.ts), which no caller can set.
 *
 * With our records (`db`: the gateway passes them) a suspend or a resume the tenant's state refuses
 * (suspendRefusal: closing or closed; resumeRefusal: that, or a delayed close waiting out its window) is refused
 * here, before anything starts; a run started without them meets the same rule in its activity. With the platform
 * as well (`platform`, the parent key the gateway holds, read-only) a resume whose wallet is below its floor (its
 * plan's, else `resumeFloorMicroUsd`, the server's RESUME_BALANCE_FLOOR_MICRO_USD) is refused too
 * (resumeBalanceRefusal), the run reading the balance again when it resumes.
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
    /** Seals an admin's sooner close for the run (the gateway's); without it the run holds the close to its minimum. */
    vault?: Vault;
    db?: Queryable;
    /** The platform with the parent key, to read the wallet a resume is reviewed by (absent: the run reads it). */
    platform?: PlatformClient;
    /** RESUME_BALANCE_FLOOR_MICRO_USD, for a tenant whose plan declares no floor (absent: 0). */
    resumeFloorMicroUsd?: string;
  } = {},
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  if (typeof rawInput === 'object' && rawInput !== null && 'closeSooner' in rawInput)
    throw new InvalidInputError([`closeSooner: ${CLOSE_SOONER_RULE}`]);
  const parsed: LifecycleRequest = parseCallerInput(lifecycleInputSchema, rawInput);
  const afterProblem = lifecycleAfterProblem(action, parsed.after);
  if (afterProblem) throw new InvalidInputError([afterProblem]);
  if (action === 'suspend' && options.db)
    assertTenantAllows(suspendRefusal, await tenantOf(options.db, parsed.externalRef));
  if (action === 'resume' && options.db) await assertResumable(options.db, parsed.externalRef, options);
  // A close without `after` takes the configured default (CLOSE_DELAY); `0` closes at once.
  const after = action === 'close' ? (parsed.after ?? options.closeDelay) : undefined;
  const minimum = options.closeDelay ?? '0';
  const tooSoon = after === undefined ? null : closeDelayMinimumProblem(after, minimum, options.closeDelayFrom);
  if (tooSoon && !options.closeSooner) throw new InvalidInputError([tooSoon]);
  const input: LifecycleRequest = { ...parsed, ...(after !== undefined && after !== '0' ? { after } : {}) };
  if (after === '0') delete input.after;
  const workflowId = lifecycleWorkflowId(action, input.externalRef);
  if (tooSoon && options.vault)
    input.closeSooner = sealCloseSoonerGrant(options.vault, {
      workflowId,
      after: after!,
      by: input.operator,
      issuedAtMs: Date.now(),
    });
  return client.workflow.start(LifecycleAction[action], {
    taskQueue: options.taskQueue ?? DEFAULTS.TEMPORAL_TASK_QUEUE,
    workflowId,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
  });
}

async function tenantOf(db: Queryable, externalRef: string): Promise<TenantRow> {
  const tenant = await findTenant(db, externalRef);
  if (!tenant) throw new TenantNotFoundError(externalRef);
  return tenant;
}

/**
 * The tenant exists and may be resumed now (the one rule, resumeRefusal), and, where the platform can be asked,
 * its wallet holds its resume floor (resumeBalanceRefusal). A floor of 0 asks nothing; a platform that does not
 * answer leaves the review to the run, which retries its read.
 */
async function assertResumable(
  db: Queryable,
  externalRef: string,
  review: { platform?: PlatformClient; resumeFloorMicroUsd?: string },
): Promise<void> {
  const tenant = await tenantOf(db, externalRef);
  const scheduled = await findScheduledClose(db, externalRef);
  assertTenantAllows(resumeRefusal, { ...tenant, scheduledCloseAt: scheduled?.closeAt ?? null });
  if (!review.platform || !tenant.subaccountId) return;
  const floor = await resumeFloorFor(db, tenant, review.resumeFloorMicroUsd);
  if (BigInt(floor.floorMicroUsd) <= 0n) return;
  let balanceMicroUsd: string | null;
  try {
    const { wallet } = await review.platform.getWallet({ subaccountId: tenant.subaccountId });
    balanceMicroUsd = wallet.balanceKnown ? wallet.balanceMicroUsd! : null;
  } catch (error) {
    if (error instanceof PlatformError) return;
    throw error;
  }
  assertTenantAllows(resumeBalanceRefusal, { ...tenant, ...floor, balanceMicroUsd });
}

export const delayMs = closeDelayMs;

/** Undoes a delayed close inside its window: the tenant is back as it was (an Update with a validator). */
export async function cancelClose(client: Client, externalRef: string, by: DecisionBy): Promise<DecisionAnswer> {
  return sendDecision(client, lifecycleWorkflowId('close', externalRef), cancelCloseUpdate, by);
}
