import { ActivityFailure, ApplicationFailure, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { TransferVerdict } from '../src/domain/operator-decisions.js';
import { databaseStep } from './activity-policies.js';

/**
 * The run checks a resolveTransfer verdict against the worker's approval policy before taking it
 * (activities/approvals.ts consumeApproval), so a verdict sent straight to Temporal (Web UI,
 * `temporal workflow update`) is held to the same four-eyes rule as one sent by tenantctl or /v1.
 * The validator cannot know the policy (it must be synchronous and deterministic): the activity
 * decides, and answers "not required" when the policy does not gate resolveTransfer.
 */
const steps = proxyLocalActivities<Activities>(databaseStep);

export interface VerdictToCheck {
  externalRef: string;
  close: boolean;
  purpose?: string;
  verdict: TransferVerdict;
}

/**
 * The check: rejects with an ApplicationFailure typed APPROVAL_REQUIRED or APPROVAL_NOT_VALID (the
 * approval is used up when it resolves).
 */
export function approvalCheck(input: VerdictToCheck): Promise<void> {
  const { verdict } = input;
  return steps
    .consumeApproval({
      workflowId: workflowInfo().workflowId,
      externalRef: input.externalRef,
      close: input.close,
      ...(input.close ? { purpose: input.purpose } : {}),
      outcome: verdict.outcome,
      operator: verdict.operator,
      approvalId: verdict.approvalId ?? null,
    })
    .then(
      () => undefined,
      (error: unknown) => {
        // The caller of the Update sees the activity's own type (APPROVAL_*), not "activity failed".
        if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure) throw error.cause;
        throw error;
      },
    );
}
