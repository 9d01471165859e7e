import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { CloseTransferVerdict, DecisionAnswer } from '../src/domain/operator-decisions.js';

export type CloseStage =
  | 'closing'
  | 'stopping_other_work'
  | 'resolving_transfers'
  | 'needs_operator'
  | 'revoking_keys'
  | 'resuming_for_cleanup'
  | 'deleting_projects'
  | 'verifying_empty'
  | 'closing_on_platform'
  | 'closed';

export interface CloseStatus {
  externalRef: string;
  stage: CloseStage;
  subaccountId: string | null;
  keysRevoked: string[];
  /** Per project: what happened to it. */
  projects: Record<string, 'deleting' | 'deleted' | 'already_gone'>;
  rounds: number;
  openTransfers: Array<{ purpose: string; state: string }>;
  waitingFor: string | null;
  balanceLeftMicroUsd: string | null;
}

export interface CloseTenantResult {
  externalRef: string;
  subaccountId: string;
  status: 'closed';
  alreadyClosed: boolean;
  projectsDeleted: number;
  keysRevoked: number;
  balanceLeftMicroUsd: string | null;
}

export const closeStatusQuery = defineQuery<CloseStatus>('closeStatus');
/**
 * An operator's verdict on a transfer a close could not reconcile, as an Update: refused unless the
 * close waits in needs_operator for that transfer; answers once the verdict is applied.
 */
export const closeResolveTransferUpdate = defineUpdate<DecisionAnswer, [CloseTransferVerdict]>('resolveTransfer');
/** The same verdict as a signal, kept for runs that already hold one in their history; checked the same way. */
export const closeResolveTransferSignal = defineSignal<[CloseTransferVerdict]>('resolveTransfer');
