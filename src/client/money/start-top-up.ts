import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { fundTenantInputSchema, sameTopUpRequest, type ParsedFundTenantInput } from '../../domain/top-up-input.js';
import { topUpWorkflowId } from '../../domain/ids.js';
import { parseCallerInput } from '../../domain/tenant-input.js';
import { assertWithinTransferLimit } from '../../domain/transfer-limit.js';
import { tenantExternalRefKey } from '../../domain/search-attributes.js';
import type { fundTenant } from '../../../workflows/fund-tenant.js';
import { topUpStatusQuery } from '../../../workflows/fund-tenant-messages.js';
import { DEFAULTS } from '../../config/defaults.js';

/**
 * For signup backends and operators: start (or join) one top-up. Idempotent on the tenant and the
 * caller's idempotency key — the workflow id is `fund:<externalRef>:<key>`, one run per key for
 * good — and a second call under the same key with another amount or reason is refused with
 * IdempotencyKeyReusedError, never joined. Ledger checks (tenant open, caps) are the workflow's.
 */
export interface StartTopUpOptions {
  taskQueue?: string;
  /** TRANSFER_MAX_MICRO_USD (absent: its default); the worker holds every run to its own setting too. */
  maxTransferMicroUsd?: string | undefined;
}

export type TopUpHandle = WorkflowHandle<typeof fundTenant> & { started: boolean; input: ParsedFundTenantInput };

export class IdempotencyKeyReusedError extends Error {
  override name = 'IdempotencyKeyReusedError';
  readonly code = 'IDEMPOTENCY_KEY_REUSED';
  constructor(readonly idempotencyKey: string) {
    super(`idempotency key ${idempotencyKey} was already used for this tenant with another amount or reason`);
  }
}

/** What the memo keeps of a request, to tell a replay from a reused key. */
interface TopUpMemo {
  amountMicroUsd: string;
  reason: string | null;
}

export async function startTopUp(
  client: Client,
  rawInput: unknown,
  options: StartTopUpOptions = {},
): Promise<TopUpHandle> {
  const input = parseCallerInput(fundTenantInputSchema, rawInput);
  assertWithinTransferLimit({ amountMicroUsd: input.amountMicroUsd }, options.maxTransferMicroUsd);
  const workflowId = topUpWorkflowId(input.externalRef, input.idempotencyKey);
  const memo: TopUpMemo = { amountMicroUsd: input.amountMicroUsd, reason: input.reason ?? null };
  try {
    const handle = await client.workflow.start<typeof fundTenant>('fundTenant', {
      taskQueue: options.taskQueue ?? DEFAULTS.TEMPORAL_TASK_QUEUE,
      workflowId,
      args: [input],
      // One run per key, ever: a finished top-up answers with its result, it is never run again.
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      memo: { topUp: memo },
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
    });
    return Object.assign(handle, { started: true, input });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  const handle = client.workflow.getHandle<typeof fundTenant>(workflowId);
  const description = await handle.describe();
  // Started elsewhere (the Web UI) without our memo: ask the run itself.
  const existing = (description.memo?.topUp as TopUpMemo | undefined) ?? (await firstInputOf(handle));
  if (!existing || !sameTopUpRequest(existing, input)) throw new IdempotencyKeyReusedError(input.idempotencyKey);
  return Object.assign(handle, { started: false, input });
}

async function firstInputOf(handle: WorkflowHandle<typeof fundTenant>): Promise<TopUpMemo | undefined> {
  const status = await handle.query(topUpStatusQuery).catch(() => undefined);
  return status ? { amountMicroUsd: status.amountMicroUsd, reason: status.reason } : undefined;
}
