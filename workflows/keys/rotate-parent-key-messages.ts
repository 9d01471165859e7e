import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ParentKeyRef, PendingProcess } from '../../activities/keys/parent-key.js';

export type { PendingProcess };

export type ParentKeyRotationStage =
  | 'creating_key'
  | 'key_limit'
  | 'verifying'
  | 'waiting_for_switch'
  /** The old key's platform id is unknown and several active keys could be it: an operator names it. */
  | 'naming_old_key'
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
  /**
   * Live processes (reported within staleAfter) and those not yet on the new key: `stragglers` as
   * `<processId> (<kind>)`, `pending` with their last report.
   */
  processes: { live: number; stragglers: string[]; pending?: PendingProcess[] };
  /** When every live process was seen on the new key (the workflow's clock, ISO); null before. */
  switchedAt?: string | null;
  /** At the key limit: the parent's active platform keys. */
  activeKeys: Array<{ id: string; name: string | null; lastUsedAt: string | null }>;
  /** While the old key is being named: the active platform keys that could be it. */
  candidates?: string[];
  quietCheck: string | null;
  notes: string[];
}

export const parentKeyRotationStatusQuery = defineQuery<ParentKeyRotationStatus>('parentKeyRotationStatus');

/**
 * Our key records changed (an operator named the old key's platform id): the run looks again now instead of
 * at its next poll. Not a decision: it changes nothing by itself, the run reads our records.
 */
export const parentKeyRecordsChangedSignal = defineSignal('parentKeyRecordsChanged');
