import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { onboardTenantInputSchema, parseCallerInput, type OnboardTenantInput } from '../../domain/tenant-input.js';
import { tenantExternalRefKey, tenantStatusKey } from '../../domain/search-attributes.js';
import { assertWithinTransferLimit } from '../../domain/transfer-limit.js';
import type { onboardTenant } from '../../../workflows/onboard-tenant.js';
import { onboardingStatusQuery } from '../../../workflows/onboard-tenant-messages.js';
import { onboardingWorkflowId } from '../../domain/ids.js';
import { DEFAULTS } from '../../config/defaults.js';
import type { Queryable } from '../../db/pool.js';
import { resolvePlan } from '../../db/plans-store.js';
import { planSpecText } from '../../domain/plan-ref.js';

/**
 * For signup backends: start (or join) the onboarding of one tenant. Idempotent on the external
 * ref — the workflow id is `onboard:<externalRef>`, so 20 concurrent calls give one run — and a
 * second call that names the same external ref with ANOTHER name is refused, never silently joined.
 * A failed run may be started again (it resumes from the records); a completed one is returned.
 */
export interface StartOnboardingOptions {
  taskQueue?: string;
  /** Lower latency when this client shares the worker's connection. */
  requestEagerStart?: boolean;
  /** TRANSFER_MAX_MICRO_USD (absent: its default); the worker holds every run to its own setting too. */
  maxTransferMicroUsd?: string | undefined;
  /**
   * PLATFORM_TENANT_KEY_LIMIT (absent: its default): a plan whose slots do not fit it is refused, as the worker does.
   */
  tenantKeyLimit?: number | undefined;
  /**
   * Our records, to check `plan` against before the run starts (an unknown plan or version is refused
   * here, naming `plan`, and no run starts) and to pin its version in the run's input. Without them a
   * run's first step resolves the plan (and refuses an unknown one) itself.
   */
  db?: Queryable | undefined;
  /**
   * The run's workflow task timeout (Temporal's default, 10 s, when absent); the chaos run's overlap mode shortens it.
   */
  workflowTaskTimeout?: string | undefined;
}

export type OnboardingHandle = WorkflowHandle<typeof onboardTenant> & { started: boolean };

export class ExternalRefConflictError extends Error {
  override name = 'ExternalRefConflictError';
  readonly code = 'EXTERNAL_REF_CONFLICT';
}

export async function startOnboarding(
  client: Client,
  rawInput: unknown,
  options: StartOnboardingOptions = {},
): Promise<OnboardingHandle> {
  const parsed: OnboardTenantInput = parseCallerInput(onboardTenantInputSchema, rawInput);
  assertWithinTransferLimit({ fundingMicroUsd: parsed.fundingMicroUsd }, options.maxTransferMicroUsd);
  // The version is pinned now (the latest, when none is named): a retried or replayed run never moves.
  const input: OnboardTenantInput =
    parsed.plan !== undefined && options.db
      ? { ...parsed, plan: planSpecText(await resolvePlan(options.db, parsed.plan, options)) }
      : parsed;
  const workflowId = onboardingWorkflowId(input.externalRef);
  try {
    const handle = await client.workflow.start<typeof onboardTenant>('onboardTenant', {
      taskQueue: options.taskQueue ?? DEFAULTS.TEMPORAL_TASK_QUEUE,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      memo: { tenantName: input.name },
      // Searchable from the start, and the run need not upsert them again (onboard-tenant-attributes.ts).
      typedSearchAttributes: new TypedSearchAttributes([
        { key: tenantExternalRefKey, value: input.externalRef },
        { key: tenantStatusKey, value: 'recording' },
      ]),
      ...(options.requestEagerStart ? { requestEagerStart: true } : {}),
      ...(options.workflowTaskTimeout ? { workflowTaskTimeout: options.workflowTaskTimeout } : {}),
    });
    return Object.assign(handle, { started: true });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  const handle = client.workflow.getHandle<typeof onboardTenant>(workflowId);
  const description = await handle.describe();
  // Started elsewhere (e.g. the Web UI) without our memo: ask the run itself.
  const existingName =
    description.memo?.tenantName ??
    (await handle.query(onboardingStatusQuery).then(
      (status) => status.name,
      () => undefined,
    ));
  if (existingName !== input.name) {
    throw new ExternalRefConflictError(
      `external ref ${input.externalRef} is already being onboarded under another name`,
    );
  }
  return Object.assign(handle, { started: false });
}
