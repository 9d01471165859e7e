-- Records that went back in time (issue 48). An onboarding step that finds its tenant's record gone (restored from a
-- backup taken before the onboarding recorded it) writes it again from the run and the platform, and says when: its
-- first key's create then revokes the keys of that generation a lost record made, as a newer attempt does.
ALTER TABLE tenants ADD COLUMN records_restored_at timestamptz;

-- A rotation our records hold open whose run Temporal shows ended: the records lost its end (a restore).
ALTER TABLE drift_findings DROP CONSTRAINT drift_findings_kind_check;
ALTER TABLE drift_findings ADD CONSTRAINT drift_findings_kind_check CHECK (kind IN (
  'subaccount_unrecorded', 'subaccount_mismatch', 'subaccount_gone', 'subaccount_suspended',
  'subaccount_not_suspended', 'subaccount_not_closed', 'onboarding_unrecorded', 'key_orphan', 'key_unrecorded',
  'key_revoked_on_platform', 'key_missing_on_platform', 'key_active_but_revoked', 'transfer_unknown',
  'transfer_unrecorded', 'balance_unexplained', 'key_rotation_overdue', 'key_unmanaged', 'plan_slot_missing',
  'plan_policy_differs', 'plan_schedule_differs', 'rotation_unrecorded'));
