import { setHandler } from '@temporalio/workflow';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { checkDecisionBy, type DecisionAnswer, type DecisionBy } from '../../src/domain/operator-decisions.js';
import { accepted, refuseUnlessApplicable, signalAccepted } from '../decisions.js';
import {
  abortRotationSignal,
  abortRotationUpdate,
  escalateToEmergencySignal,
  escalateToEmergencyUpdate,
  retryKeyCreateSignal,
  retryKeyCreateUpdate,
  revokeAnywaySignal,
  revokeAnywayUpdate,
  type RotationStage,
  type RotationStatus,
} from './rotate-tenant-key-messages.js';
import type { KeySlotDecisions } from './key-slot-wait.js';

/**
 * The operator decisions of rotateTenantKey, each an Update whose validator refuses a malformed
 * value and a decision the run is not waiting for (so an accepted one always takes effect):
 *   revokeAnyway   waiting_for_quiet | held (not an emergency: that revokes without waiting)
 *   abortRotation  key_limit | waiting_for_quiet | held (earlier: `tenantctl rotation cancel`)
 *   retryKeyCreate key_limit
 *   escalateToEmergency  any stage before the old key's revoke or a roll-back
 * The old signals of the same names stay, checked the same way, for runs that already hold one.
 */
/** `observed`: the old key as the quiet gate saw it when it passed (absent for operator and emergency revokes). */
export type Decision = { kind: 'revoke' | 'abort'; by: DecisionBy | null; observed?: KeyUsage };
export interface RotationSignals extends KeySlotDecisions {
  decision: Decision | undefined;
}

const GATE: readonly RotationStage[] = ['waiting_for_quiet', 'held'];
const TOO_LATE_TO_ESCALATE: readonly RotationStage[] = [
  'revoking_old',
  'completed',
  'rolling_back',
  'aborted',
  'cancelled',
  'failed',
];

/** The decisions (Update names) whose validator would accept one now: what a wait lists. */
export type ApplicableDecisions = () => string[];

export function installRotationDecisions(status: RotationStatus, signals: RotationSignals): ApplicableDecisions {
  const id = `rotation of ${status.externalRef} slot ${status.slot}`;
  const decided = () =>
    signals.decision
      ? `the ${id} already has a decision: ${signals.decision.kind}${signals.decision.by ? ` by ${signals.decision.by.operator}` : ''}`
      : null;
  const notAt = (what: string, stages: string) =>
    `the ${id} is ${status.stage}${status.emergency ? ' (emergency)' : ''}: ${what} applies at ${stages}`;
  const answer = (effect: string): DecisionAnswer => ({ stage: status.stage, effect });

  const rules = {
    revokeAnyway: () =>
      decided() ??
      (GATE.includes(status.stage) && !status.emergency ? null : notAt('revokeAnyway', 'waiting_for_quiet or held')),
    abortRotation: () =>
      decided() ??
      (status.stage === 'key_limit' || (GATE.includes(status.stage) && !status.emergency)
        ? null
        : notAt('abortRotation', 'key_limit, waiting_for_quiet or held (to stop it now: tenantctl rotation cancel)')),
    retryKeyCreate: () =>
      status.stage === 'key_limit' && !signals.retry ? null : notAt('retryKeyCreate', 'key_limit'),
    escalateToEmergency: () =>
      TOO_LATE_TO_ESCALATE.includes(status.stage)
        ? notAt('escalateToEmergency', 'any stage before revoking_old')
        : null,
  };
  const effects = {
    revokeAnyway: (by: DecisionBy) => {
      signals.decision ??= { kind: 'revoke', by };
      return answer('the old key is revoked now');
    },
    abortRotation: (by: DecisionBy) => {
      signals.decision ??= { kind: 'abort', by };
      return answer(
        'the rotation rolls back now: the old key is kept (redeployed if the new one went out) and the new key revoked',
      );
    },
    retryKeyCreate: () => {
      signals.retry = true;
      return answer('the key create is tried again now');
    },
    escalateToEmergency: (by: DecisionBy) => {
      if (status.emergency) return answer('already an emergency rotation: nothing changed');
      status.emergency = true;
      status.notes.push(`escalated to emergency by ${by.operator}: ${by.reason}`);
      return answer('quiet period zero from now on: the old key is revoked right after the new one is verified');
    },
  };

  for (const [update, name] of [
    [revokeAnywayUpdate, 'revokeAnyway'],
    [abortRotationUpdate, 'abortRotation'],
    [retryKeyCreateUpdate, 'retryKeyCreate'],
    [escalateToEmergencyUpdate, 'escalateToEmergency'],
  ] as const) {
    setHandler(update, (raw) => effects[name](accepted(checkDecisionBy(raw))), {
      validator: (raw) => {
        accepted(checkDecisionBy(raw));
        refuseUnlessApplicable(rules[name]());
      },
    });
  }
  for (const [signal, name] of [
    [revokeAnywaySignal, 'revokeAnyway'],
    [abortRotationSignal, 'abortRotation'],
    [escalateToEmergencySignal, 'escalateToEmergency'],
  ] as const) {
    setHandler(signal, (raw) => {
      const taken = signalAccepted(name, checkDecisionBy(raw), rules[name](), raw);
      if (taken) effects[name](taken.value);
    });
  }
  setHandler(retryKeyCreateSignal, () => {
    if (signalAccepted<void>('retryKeyCreate', { ok: true, value: undefined }, rules.retryKeyCreate(), undefined))
      effects.retryKeyCreate();
  });
  // Escalating an emergency rotation changes nothing: not listed then, though the validator accepts it.
  return () =>
    (Object.keys(rules) as Array<keyof typeof rules>).filter(
      (name) => rules[name]() === null && !(name === 'escalateToEmergency' && status.emergency),
    );
}
