import { defineQuery, defineSignal } from '@temporalio/workflow';
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
  funding: (FundWalletResult & { amountMicroUsd: string }) | { state: 'pending'; amountMicroUsd: string } | { state: 'skipped' };
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

export interface ResolveTransferSignalInput {
  outcome: 'applied' | 'not-applied';
  operator: string;
  reason: string;
}

export const onboardingStatusQuery = defineQuery<OnboardingStatus>('onboardingStatus');
/** The parent's paid balance was topped up: retry a transfer refused for INSUFFICIENT_BALANCE now. */
export const parentFundedSignal = defineSignal<[]>('parentFunded');
/** An operator's verdict on a transfer whose outcome could not be reconciled. */
export const resolveTransferSignal = defineSignal<[ResolveTransferSignalInput]>('resolveTransfer');
