import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { CloseTransferVerdict, DecisionAnswer, DecisionBy } from '../src/domain/operator-decisions.js';

export type CloseStage =
  | 'scheduled'
  | 'close_cancelled'
  | 'closing'
  | 'stopping_other_work'
  | 'resolving_transfers'
  | 'needs_operator'
  | 'revoking_keys'
  | 'resuming_for_cleanup'
  | 'deleting_projects'
  | 'verifying_empty'
  | 'writing_statement'
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
  /** A delayed close: when the window ends (ISO), and the time left when last shown. */
  closeAt?: string | null;
  timeLeft?: string | null;
}

export interface CloseTenantResult {
  externalRef: string;
  subaccountId: string;
  /** close_cancelled: an operator cancelled a delayed close inside its window (the tenant is back as it was). */
  status: 'closed' | 'close_cancelled';
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
/**
 * Cancels a delayed close inside its window (`tenantctl close --cancel R`): refused unless the run
 * waits in `scheduled`; answers once the tenant is back in the status it had.
 */
export const cancelCloseUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('cancelClose');
