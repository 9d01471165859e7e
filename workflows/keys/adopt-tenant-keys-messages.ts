import { defineQuery } from '@temporalio/workflow';
import type { QuietCheckView } from './rotate-tenant-key-messages.js';

export type AdoptionStage =
  | 'starting'
  | 'creating_key'
  | 'key_limit'
  | 'deploying'
  | 'verifying'
  | 'waiting_for_quiet'
  | 'held'
  | 'completed'
  | 'aborted'
  | 'cancelled'
  | 'failed';

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
