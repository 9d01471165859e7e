import { defineQuery, defineSignal } from '@temporalio/workflow';

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

export interface CloseResolveTransferInput {
  purpose: string;
  outcome: 'applied' | 'not-applied';
  operator: string;
  reason: string;
}

export const closeStatusQuery = defineQuery<CloseStatus>('closeStatus');
/** An operator's verdict on a transfer a close could not reconcile. */
export const closeResolveTransferSignal = defineSignal<[CloseResolveTransferInput]>('resolveTransfer');
