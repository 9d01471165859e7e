import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DecisionAnswer, DecisionBy } from '../../src/domain/operator-decisions.js';

/** Messages of rotateTenantKey: what operators see (query, current details) and can send. */
export type RotationStage =
  | 'starting'
  | 'creating_key'
  | 'key_limit'
  | 'deploying'
  | 'verifying'
  | 'waiting_for_quiet'
  | 'held'
  | 'revoking_old'
  | 'completed'
  | 'rolling_back'
  | 'aborted'
  | 'cancelled'
  | 'failed';

export interface ActiveKeyView {
  id: string;
  name: string | null;
  lastUsedAt: string | null;
  lastUseKnown: boolean;
  /** Never used, or unused for longer than the quiet period (on the platform's last-use record). */
  looksUnused: boolean;
  /** The key this rotation replaces: it is in use by definition and never a candidate to make room. */
  isCurrentKeyOfSlot: boolean;
}

export interface QuietCheckView {
  /**
   * `last-use`: the platform's last-use records; `overlap-window`: none shown, a fixed wait instead;
   * `unknown`: shown under fields we cannot read (held for an operator, never taken for "no use").
   */
  method: 'last-use' | 'overlap-window' | 'unknown' | 'skipped-emergency';
  polls: number;
  oldKeyLastUsedAt: string | null;
  /** The new key's first use seen on the platform, i.e. deploy time on the platform's own clock. */
  deployedAtPlatform: string | null;
  /** A use of the old key after the propagation allowance: some consumer never switched. */
  lateUseAt: string | null;
  quietForMs: number;
  verdict: string;
}

export interface RotationStatus {
  externalRef: string;
  slot: string;
  emergency: boolean;
  stage: RotationStage;
  rotationId: string | null;
  subaccountId: string | null;
  fromGeneration: number | null;
  toGeneration: number | null;
  /** Never a token: ids and fingerprints only. */
  oldKey: { keyId: string | null; fingerprint: string | null; status: 'active' | 'revoked' };
  newKey: { keyId: string | null; fingerprint: string | null; status: 'pending' | 'issued' | 'verified' | 'revoked' };
  deployer: string | null;
  deployedAt: string | null;
  quietCheck: QuietCheckView | null;
  /** At the active-key limit: what is active and which keys look unused. */
  activeKeys: ActiveKeyView[] | null;
  heldReason: 'deadline' | 'used_after_allowance' | 'last_use_unknown' | null;
  waitingFor: string | null;
  notes: string[];
  error: string | null;
}

export interface RotateTenantKeyResult {
  externalRef: string;
  slot: string;
  outcome: 'completed' | 'aborted';
  fromGeneration: number;
  toGeneration: number;
  /** The key that is current now. */
  keyId: string;
  fingerprint: string;
  revokedKeyId: string;
  quietCheck: QuietCheckView;
}

export type OperatorDecision = DecisionBy;

export const rotationStatusQuery = defineQuery<RotationStatus>('rotationStatus');

// Operator decisions are Updates: a validator refuses a bad or untimely one before it reaches
// history, and the caller gets the answer (the rules: src/domain/operator-decisions.ts).
/** Waiting for quiet or held: revoke the old key although it did not go quiet. */
export const revokeAnywayUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('revokeAnyway');
/** At the key limit, waiting for quiet or held: keep the old key, revoke the new one (and redeploy the old). */
export const abortRotationUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('abortRotation');
/** At the key limit: an operator freed a slot, try the create again now. */
export const retryKeyCreateUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('retryKeyCreate');
/** A leak was found while a normal rotation runs: quiet period zero from now on. */
export const escalateToEmergencyUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('escalateToEmergency');

/**
 * What a rotation tells the fleet: how it settled, that it is held (or at its key limit), or that it waits
 * out its quiet gate (`waiting_for_quiet`: it no longer counts against the fleet's bound). After that wait
 * was told, the one tell that settles it says `settles` (the fleet counts it then, in whichever of its
 * runs is current).
 */
export interface RotationSettled {
  workflowId: string;
  outcome: 'completed' | 'held' | 'key_limit' | 'failed' | 'aborted' | 'waiting_for_quiet';
  settles?: boolean;
}

/** Sent by a rotation to the fleet run that started it (by workflow id: the fleet's current run). */
export const rotationSettledSignal = defineSignal<[RotationSettled]>('rotationSettled');
