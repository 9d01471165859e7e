/**
 * The closed list of drift kinds, and which of them have a safe fix. Safe to import from workflows.
 * Every kind's meaning and what an operator does about it is in the runbook, docs/operations.md.
 */
export const DriftKind = {
  /**
   * A platform sub-account no record maps to (its external ref has no record, or a record without a sub-account id).
   */
  subaccount_unrecorded: 'subaccount_unrecorded',
  /** A sub-account carries a recorded tenant's external ref but is not that tenant's sub-account (or the reverse). */
  subaccount_mismatch: 'subaccount_mismatch',
  /**
   * Our record says the sub-account is live; the platform no longer lists it (closed or gone: the contract answers both
   * with 404).
   */
  subaccount_gone: 'subaccount_gone',
  /** Our record says active; the platform says suspended. */
  subaccount_suspended: 'subaccount_suspended',
  /** Our record says suspended; the platform says operating. */
  subaccount_not_suspended: 'subaccount_not_suspended',
  /**
   * Our record says the onboarding is under way (creating, created) with its sub-account recorded and live, no run is
   * working on the tenant, and Temporal shows its onboarding completed: the records lost its end (a restore). Only
   * reported with that proof.
   */
  onboarding_unrecorded: 'onboarding_unrecorded',
  /** Our record says closed (or the onboarding was cancelled / failed); the platform still lists the sub-account. */
  subaccount_not_closed: 'subaccount_not_closed',
  /** An active key on the platform that no key record knows (a lost create attempt of a generation we record). */
  key_orphan: 'key_orphan',
  /**
   * An active key named by our scheme for a slot generation no key record holds at all: the records lost it (restored
   * from a backup taken before it was made), and with it its secret. It may be in use: never revoked as an orphan,
   * recorded `unmanaged` so an adoption rotation replaces it through the quiet gate.
   */
  key_unrecorded: 'key_unrecorded',
  /** Our record says active; the platform shows the key revoked. */
  key_revoked_on_platform: 'key_revoked_on_platform',
  /** Our record says active; the platform does not list the key at all. */
  key_missing_on_platform: 'key_missing_on_platform',
  /** Our record says revoked; the platform shows the key active. */
  key_active_but_revoked: 'key_active_but_revoked',
  /**
   * A transfer intent still unknown (or waiting for an operator) with no onboarding running to settle it; or one our
   * records hold open (pending too) that the wallet lists as applied under its key (records restored from a backup).
   */
  transfer_unknown: 'transfer_unknown',
  /**
   * A transfer on the platform under one of our idempotency keys (`tpo-xfer-…`) that no intent of ours records: the
   * records lost it (restored from a backup taken before it was made). Never re-sent: recorded as made.
   */
  transfer_unrecorded: 'transfer_unrecorded',
  /** The tenant wallet holds more than our succeeded transfers put in, or shows transfers we never made. */
  balance_unexplained: 'balance_unexplained',
  /** An active key older than the rotation age that no rotation schedule (tenant or fleet) covers. */
  key_rotation_overdue: 'key_rotation_overdue',
  /**
   * An active key recorded `unmanaged` at import (we never held its token): known, not an orphan, until an adoption
   * rotation (`tenantctl rotate-key R --adopt`) replaces it.
   */
  key_unmanaged: 'key_unmanaged',
  /**
   * A tenant on a plan version has no active key in our records for a slot the plan declares (report only: the
   * plan's rollout or assignment converges it, never drift).
   */
  plan_slot_missing: 'plan_slot_missing',
  /** A tenant on a plan version has no auto top-up policy, or one whose below/to/caps differ from the plan's. */
  plan_policy_differs: 'plan_policy_differs',
  /** A plan slot's rotation Schedule is missing, paused, or rotates at another interval than the plan's rotation. */
  plan_schedule_differs: 'plan_schedule_differs',
  /**
   * A rotation our records hold open (running, held, key_limit) whose run Temporal shows ended: the records lost its
   * end (restored from a backup taken during it). Reported with how the run ended; a terminated run's rotation is
   * resumed by the next rotation of the slot.
   */
  rotation_unrecorded: 'rotation_unrecorded',
} as const;
export type DriftKind = (typeof DriftKind)[keyof typeof DriftKind];
export const DRIFT_KINDS = Object.values(DriftKind) as readonly DriftKind[];

/** The fixes there are; each belongs to exactly one kind, and only where the evidence is unambiguous. */
export const DriftFix = {
  /** Record the sub-account on the tenant record of a pending onboarding that carries its external ref. */
  adopt_subaccount: 'adopt_subaccount',
  /** Mark the key record revoked, as the platform shows. */
  mark_key_revoked: 'mark_key_revoked',
  /** Record the tenant onboarded (active, or suspended as the platform shows), as its completed onboarding left it. */
  record_onboarded: 'record_onboarded',
  /** Record the tenant closed: the platform no longer lists it and our close of it completed. */
  record_closed: 'record_closed',
  /** Record the tenant suspended: the platform shows it suspended and our last lifecycle run suspended it. */
  record_suspended: 'record_suspended',
  /** Record the tenant active: the platform shows it operating and our last lifecycle run resumed it. */
  record_resumed: 'record_resumed',
  /** Revoke an orphan key named by our scheme (tpo-<slot>-g<N>-a<M>) that has been quiet for the quiet period. */
  revoke_orphan_key: 'revoke_orphan_key',
  /** Record an open intent succeeded: the wallet lists a transfer under its very key. */
  settle_transfer: 'settle_transfer',
  /** Record a transfer the wallet lists under one of our keys as a succeeded intent (never sent again). */
  adopt_transfer: 'adopt_transfer',
  /** Record a key of ours the records lost as `unmanaged` (its secret is gone): an adoption rotation replaces it. */
  adopt_key: 'adopt_key',
  /** Record an open rotation ended as its run ended (completed, failed, cancelled), as Temporal shows. */
  record_rotation_end: 'record_rotation_end',
} as const;
export type DriftFix = (typeof DriftFix)[keyof typeof DriftFix];

export const FIX_OF_KIND: Partial<Record<DriftKind, DriftFix>> = {
  subaccount_unrecorded: 'adopt_subaccount',
  key_revoked_on_platform: 'mark_key_revoked',
  key_orphan: 'revoke_orphan_key',
  transfer_unknown: 'settle_transfer',
  onboarding_unrecorded: 'record_onboarded',
  subaccount_gone: 'record_closed',
  subaccount_suspended: 'record_suspended',
  subaccount_not_suspended: 'record_resumed',
  transfer_unrecorded: 'adopt_transfer',
  key_unrecorded: 'adopt_key',
  rotation_unrecorded: 'record_rotation_end',
};

export type DriftPolicy = 'report' | 'fix';
export type DriftPolicies = Partial<Record<DriftKind, DriftPolicy>>;

/** Our key naming (activities/idempotency-keys.ts keyNamePrefix plus the attempt suffix). */
export const OUR_KEY_NAME = /^tpo-[a-z0-9][a-z0-9-]{0,31}-g[1-9][0-9]*-a[1-9][0-9]*$/;

/** The slot and generation a key name of our scheme carries; null for any other name. */
export function slotGenerationOfKeyName(name: string | null): { slot: string; generation: number } | null {
  const match = name && OUR_KEY_NAME.test(name) ? /^tpo-(.+)-g([1-9][0-9]*)-a[1-9][0-9]*$/.exec(name) : null;
  return match ? { slot: match[1]!, generation: Number(match[2]) } : null;
}

/** Our transfer idempotency keys (activities/idempotency-keys.ts transferKey): a digest and a generation. */
export const OUR_TRANSFER_KEY = /^tpo-xfer-[0-9a-f]{32}-[1-9][0-9]*$/;
