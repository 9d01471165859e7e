import type { DecisionBy } from '../../src/domain/operator-decisions.js';
import { installDecisions } from '../decision-table.js';
import type { KeySlotDecisions } from './key-slot-wait.js';
import type { ParentKeyRotationStage, ParentKeyRotationStatus } from './rotate-parent-key-messages.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from './rotate-tenant-key-messages.js';

export type ParentKeyDecision = 'retryKeyCreate' | 'abortRotation' | 'revokeAnyway' | 'escalateToEmergency';

const GATE = ['waiting_for_switch', 'naming_old_key', 'waiting_for_quiet', 'held'] as const;

/**
 * The operator decisions of rotateParentKey (the same Update names as a tenant rotation's) and what a run has
 * taken of them. A decision after an abort or a revokeAnyway was accepted cannot apply (the run is already on
 * its way), nor a revokeAnyway while the old key's platform id is unknown.
 */
export class ParentKeyDecisions implements KeySlotDecisions {
  retry = false;
  abortBy: DecisionBy | null;
  revokeBy: DecisionBy | null;

  constructor(carried?: { abortBy: DecisionBy | null; revokeBy: DecisionBy | null }) {
    this.abortBy = carried?.abortBy ?? null;
    this.revokeBy = carried?.revokeBy ?? null;
  }

  aborted(): boolean {
    return this.abortBy !== null;
  }

  /** Installs the Updates; returns the decisions that apply now (what a wait lists), the validators' rule. */
  install(status: ParentKeyRotationStatus, oldPlatformId: () => string | null): () => ParentKeyDecision[] {
    return installDecisions<ParentKeyRotationStage, ParentKeyDecision>({
      table: {
        retryKeyCreate: ['key_limit'],
        abortRotation: ['key_limit', ...GATE],
        revokeAnyway: GATE,
        escalateToEmergency: ['creating_key', 'key_limit', 'verifying', ...GATE],
      },
      updates: {
        retryKeyCreate: retryKeyCreateUpdate,
        abortRotation: abortRotationUpdate,
        revokeAnyway: revokeAnywayUpdate,
        escalateToEmergency: escalateToEmergencyUpdate,
      },
      stage: () => status.stage,
      settled: (name) =>
        this.settled() ?? (name === 'escalateToEmergency' && status.emergency ? 'already an emergency rotation' : null),
      notAt: (name, stages) => `${name} applies at ${stages.join(', ')} (the run is at ${status.stage})`,
      also: (name) => (name === 'revokeAnyway' && !oldPlatformId() ? unknownOldId(status) : null),
      take: (name, by) => {
        switch (name) {
          case 'retryKeyCreate':
            this.retry = true;
            return 'the create is tried again now';
          case 'abortRotation':
            this.abortBy = by;
            return 'rolling back: the old key is current again, the new one is revoked';
          case 'revokeAnyway':
            this.revokeBy = by;
            return 'the old key is revoked now';
          case 'escalateToEmergency':
            status.emergency = true;
            status.notes.push(`escalated to emergency by ${by.operator}: ${by.reason}`);
            return 'no quiet gate: the old key is revoked as soon as every live process uses the new one';
        }
      },
    });
  }

  private settled(): string | null {
    if (this.abortBy)
      return `the rotation is being rolled back (abortRotation by ${this.abortBy.operator}): no other decision applies`;
    if (this.revokeBy) return `revokeAnyway by ${this.revokeBy.operator} was accepted: the old key is being revoked`;
    return null;
  }
}

function unknownOldId(status: ParentKeyRotationStatus): string {
  const candidates = status.candidates;
  return (
    `the old key's platform id is unknown (imported without --key-id` +
    `${candidates?.length ? `, and ${candidates.length} active platform keys could be it` : ''}): ` +
    `revokeAnyway cannot revoke it. Find ours with \`tenantctl parent-key platform-keys\`, name it with ` +
    `\`tenantctl parent-key identify <keyId>\`, then decide again`
  );
}
