import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DecisionAnswer, DecisionBy, TransferVerdict } from '../src/domain/operator-decisions.js';
import type { FundWalletResult } from '../activities/wallet.js';

/** Messages of onboardTenant: what operators and the signup backend can see and send. */
export type OnboardingStage =
  | 'recording'
  | 'funding_and_issuing_key'
  | 'funding'
  | 'waiting_for_parent_funds'
  | 'reconciling_transfer'
  | 'needs_operator'
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
  key: { state: 'pending' | 'issued' | 'verified' | 'key_limit'; keyId: string | null; fingerprint: string | null };
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
  funding: { transferId: string | null } | null;
}

export const onboardingStatusQuery = defineQuery<OnboardingStatus>('onboardingStatus');

// Operator decisions are Updates: a validator refuses a bad or untimely one before it reaches
// history, and the caller gets the answer (the rules: src/domain/operator-decisions.ts).
/** The parent's paid balance was topped up: retry a transfer refused for INSUFFICIENT_BALANCE now. */
export const parentFundedUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('parentFunded');
/** An operator's verdict on a transfer in needs_operator; answers once the verdict is applied. */
export const resolveTransferUpdate = defineUpdate<DecisionAnswer, [TransferVerdict]>('resolveTransfer');

/** The same decisions as signals, kept for runs that already hold one in their history; checked the same way. */
export const parentFundedSignal = defineSignal<[]>('parentFunded');
export const resolveTransferSignal = defineSignal<[TransferVerdict]>('resolveTransfer');
