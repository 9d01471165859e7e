import { defineQuery } from '@temporalio/workflow';
import type { QuietCheckView, RotationStage } from './rotate-tenant-key-messages.js';

/** A rotation's stages but its own two: an adoption keeps the old keys it cannot revoke, it never rolls back. */
export type AdoptionStage = Exclude<RotationStage, 'revoking_old' | 'rolling_back'>;

export interface AdoptedKeyView {
  keyId: string;
  generation: number;
  state: 'waiting' | 'held' | 'revoked' | 'kept';
  heldReason: string | null;
  quietCheck: QuietCheckView | null;
}

export interface AdoptionStatus {
  externalRef: string;
  slot: string;
  stage: AdoptionStage;
  rotationId: string | null;
  newKey: { keyId: string | null; fingerprint: string | null };
  keys: AdoptedKeyView[];
  notes: string[];
  waitingFor: string | null;
}

export const adoptionStatusQuery = defineQuery<AdoptionStatus>('adoptionStatus');
