import { defineQuery } from '@temporalio/workflow';
import type { FundWalletResult } from '../activities/wallet.js';
import type { OnboardingPlanOutcome } from './onboard-tenant-plan.js';

/** Messages of onboardTenant: what operators and the signup backend can see and send. */
export type OnboardingStage =
  | 'recording'
  | 'funding_and_issuing_key'
  | 'funding'
  | 'waiting_for_parent_funds'
  | 'reconciling_transfer'
  | 'needs_operator'
  /**
   * An onboarding by plan, once the tenant is active: the plan's other keys, schedules, policy
   * (onboard-tenant-plan.ts).
   */
  | 'applying_plan'
  | 'active'
  | 'failed'
  | 'cancelled';

export interface OnboardingStatus {
  externalRef: string;
  name: string;
  stage: OnboardingStage;
  subaccountId: string | null;
  funding:
    | (FundWalletResult & { amountMicroUsd: string })
    | { state: 'pending'; amountMicroUsd: string }
    | { state: 'skipped' };
  /** Never the token: the platform's key id and our fingerprint of it. */
  key: {
    /** rejected: the platform refused the new keys at their first use; the run waits and tries another. */
    state: 'pending' | 'issued' | 'verified' | 'key_limit' | 'rejected';
    keyId: string | null;
    fingerprint: string | null;
  };
  /** What the run is waiting for, in words, and how to unblock it. */
  waitingFor: string | null;
  error: string | null;
}

export interface OnboardTenantResult {
  externalRef: string;
  subaccountId: string;
  status: 'active';
  keyId: string;
  fingerprint: string;
  /**
   * The funding made: its transfer id, and (runs since issue 48's import of closed tenants) its amount and the
   * idempotency key the platform made it under, from which a restore of the records can be recorded again.
   */
  funding: { transferId: string | null; amountMicroUsd?: string; transferKey?: string } | null;
  /** An onboarding by plan: what it did for the plan (absent without one). */
  plan?: OnboardingPlanOutcome;
}

export const onboardingStatusQuery = defineQuery<OnboardingStatus>('onboardingStatus');

// Operator decisions are the transfer loop's Updates (transfer-loop-messages.ts), shared with fundTenant.
export { parentFundedUpdate, resolveTransferUpdate } from './transfer-loop-messages.js';
