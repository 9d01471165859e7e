import type { KeyUsage } from '../../activities/keys/rotation.js';
import type { DecisionBy } from '../../src/domain/operator-decisions.js';
import { installDecisions, type DecisionTable } from '../decision-table.js';
import type { KeySlotDecisions } from './key-slot-wait.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
  type RotationStage,
  type RotationStatus,
} from './rotate-tenant-key-messages.js';

/**
 * The operator decisions of rotateTenantKey (and, but for escalateToEmergency, of adoptTenantKeys),
 * each an Update whose validator refuses a malformed value and a decision the run is not waiting for
 * (so an accepted one always takes effect):
 *   revokeAnyway         waiting_for_quiet | held (not an emergency: that revokes without waiting)
 *   abortRotation        key_limit | waiting_for_quiet | held (earlier: `tenantctl rotation cancel`)
 *   retryKeyCreate       key_limit
 *   escalateToEmergency  any stage before the old key's revoke or a roll-back
 */
/** `observed`: the old key as the quiet gate saw it when it passed (absent for operator and emergency revokes). */
export type Decision = { kind: 'revoke' | 'abort'; by: DecisionBy | null; observed?: KeyUsage };
export interface RotationSignals extends KeySlotDecisions {
  decision: Decision | undefined;
}

const GATE = ['waiting_for_quiet', 'held'] as const;
const BEFORE_REVOKE = ['starting', 'creating_key', 'key_limit', 'deploying', 'verifying', ...GATE] as const;

export const ROTATION_DECISIONS = {
  revokeAnyway: GATE,
  abortRotation: ['key_limit', ...GATE],
  retryKeyCreate: ['key_limit'],
  escalateToEmergency: BEFORE_REVOKE,
} as const satisfies DecisionTable<RotationStage, string>;
export type RotationDecision = keyof typeof ROTATION_DECISIONS;

const WHERE: Record<RotationDecision, string> = {
  revokeAnyway: 'waiting_for_quiet or held',
  abortRotation: 'key_limit, waiting_for_quiet or held (to stop it now: tenantctl rotation cancel)',
  retryKeyCreate: 'key_limit',
  escalateToEmergency: 'any stage before revoking_old',
};
/** What an accepted decision does (the Update's answer), but for escalateToEmergency (its own answer). */
export const ROTATION_EFFECTS = {
  revokeAnyway: 'the old key is revoked now',
  abortRotation:
    'the rotation rolls back now: the old key is kept (redeployed if the new one went out) and the new key revoked',
  retryKeyCreate: 'the key create is tried again now',
} as const;

/** The decisions (Update names) whose validator would accept one now: what a wait lists. */
export type ApplicableDecisions = () => string[];

/**
 * Installs the Updates with their validators; `take` (the run's own method) applies an accepted one to the run's
 * status and signals and answers what it does.
 */
export function installRotationDecisions(
  status: RotationStatus,
  signals: RotationSignals,
  take: (name: RotationDecision, by: DecisionBy) => string,
): ApplicableDecisions {
  const id = `rotation of ${status.externalRef} slot ${status.slot}`;
  const notAt = (name: RotationDecision) =>
    `the ${id} is ${status.stage}${status.emergency ? ' (emergency)' : ''}: ${name} applies at ${WHERE[name]}`;
  return installDecisions<RotationStage, RotationDecision>({
    table: ROTATION_DECISIONS,
    updates: {
      revokeAnyway: revokeAnywayUpdate,
      abortRotation: abortRotationUpdate,
      retryKeyCreate: retryKeyCreateUpdate,
      escalateToEmergency: escalateToEmergencyUpdate,
    },
    stage: () => status.stage,
    settled: (name) =>
      (name === 'revokeAnyway' || name === 'abortRotation') && signals.decision
        ? `the ${id} already has a decision: ${signals.decision.kind}` +
          (signals.decision.by ? ` by ${signals.decision.by.operator}` : '')
        : null,
    notAt,
    // An emergency rotation waits for no decision at the gate; a retry already asked for is not asked again.
    also: (name) =>
      (name === 'revokeAnyway' && status.emergency) ||
      (name === 'abortRotation' && status.emergency && status.stage !== 'key_limit') ||
      (name === 'retryKeyCreate' && signals.retry)
        ? notAt(name)
        : null,
    take,
    // Escalating an emergency rotation changes nothing: not listed then, though the validator accepts it.
    listed: (name) => !(name === 'escalateToEmergency' && status.emergency),
  });
}
