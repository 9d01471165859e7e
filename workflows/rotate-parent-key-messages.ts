import { defineQuery } from '@temporalio/workflow';
import type { ParentKeyRef } from '../activities/parent-key.js';

export type ParentKeyRotationStage =
  | 'creating_key'
  | 'key_limit'
  | 'verifying'
  | 'waiting_for_switch'
  | 'waiting_for_quiet'
  | 'held'
  | 'revoking'
  | 'completed'
  | 'aborted';

/** What `tenantctl parent-key show` and the Web UI see of a running rotation: ids and fingerprints, never a token. */
export interface ParentKeyRotationStatus {
  stage: ParentKeyRotationStage;
  emergency: boolean;
  oldKey: ParentKeyRef | null;
  newKey: ParentKeyRef | null;
  /** Live processes (reported within staleAfter) and those not yet on the new key. */
  processes: { live: number; stragglers: string[] };
  /** At the key limit: the parent's active platform keys. */
  activeKeys: Array<{ id: string; name: string | null; lastUsedAt: string | null }>;
  quietCheck: string | null;
  notes: string[];
}

export const parentKeyRotationStatusQuery = defineQuery<ParentKeyRotationStatus>('parentKeyRotationStatus');
