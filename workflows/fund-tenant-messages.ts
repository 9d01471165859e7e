import { defineQuery } from '@temporalio/workflow';
import { parentFundedUpdate, resolveTransferUpdate } from './transfer-loop-messages.js';

/** Messages of fundTenant: what the caller and operators can see and send. */
export type TopUpStage =
  | 'recording'
  | 'transferring'
  | 'waiting_for_parent_funds'
  | 'reconciling_transfer'
  | 'needs_operator'
  | 'succeeded'
  | 'cap_refused'
  | 'skipped'
  | 'failed'
  | 'cancelled';

export interface TopUpStatus {
  externalRef: string;
  idempotencyKey: string;
  amountMicroUsd: string;
  reason: string | null;
  kind: 'top-up' | 'auto';
  stage: TopUpStage;
  /** The transfer intent's state (pending, succeeded, unknown, needs_operator, failed, refused). */
  transferState: string | null;
  transferId: string | null;
  /** What the run waits for, in words, and how to unblock it. */
  waitingFor: string | null;
  error: string | null;
}

export interface FundTenantResult {
  externalRef: string;
  idempotencyKey: string;
  amountMicroUsd: string;
  kind: 'top-up' | 'auto';
  /**
   * succeeded: on the tenant's wallet; cap_refused: a spend cap said no (never sent); skipped: an auto top-up found its
   * balance stale.
   */
  state: 'succeeded' | 'cap_refused' | 'skipped';
  transferId: string | null;
  /**
   * succeeded: the idempotency key the platform made the transfer under (what drift records a transfer by when a
   * restore of the records lost it and the closed wallet shows nothing). Absent from runs before it was kept.
   */
  transferKey?: string;
  /** The cap that refused, or why an auto top-up was skipped. */
  refusedBy: string | null;
}

export const topUpStatusQuery = defineQuery<TopUpStatus>('topUpStatus');
/**
 * The same decisions, by the same names and rules, as onboarding's: the transfer loop's (transfer-loop-messages.ts).
 */
export const topUpParentFundedUpdate = parentFundedUpdate;
export const topUpResolveTransferUpdate = resolveTransferUpdate;
