-- A restore of the records from a backup (issue 48): drift reports what the platform holds that the records lost
-- (a transfer under our key, a key of ours) so it can be recorded as made, never made again.
ALTER TABLE drift_findings DROP CONSTRAINT drift_findings_kind_check;
ALTER TABLE drift_findings ADD CONSTRAINT drift_findings_kind_check CHECK (kind IN (
  'subaccount_unrecorded', 'subaccount_mismatch', 'subaccount_gone', 'subaccount_suspended',
  'subaccount_not_suspended', 'subaccount_not_closed', 'onboarding_unrecorded', 'key_orphan', 'key_unrecorded', 'key_revoked_on_platform',
  'key_missing_on_platform', 'key_active_but_revoked', 'transfer_unknown', 'transfer_unrecorded',
  'balance_unexplained', 'key_rotation_overdue', 'key_unmanaged', 'plan_slot_missing', 'plan_policy_differs',
  'plan_schedule_differs'));

-- A transfer the records lost, recorded again from the wallet by drift: made once, never sent again, and not
-- counted against today's caps (it counted when it was made).
ALTER TABLE transfer_intents DROP CONSTRAINT transfer_intents_kind_check;
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_kind_check
  CHECK (kind IN ('initial', 'top-up', 'auto', 'opening', 'restored'));
ALTER TABLE transfer_intents DROP CONSTRAINT transfer_intents_top_up_shape;
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_top_up_shape CHECK (
  kind IN ('initial', 'opening', 'restored')
  OR (caller_key IS NOT NULL AND requested_by IS NOT NULL AND reserved_on IS NOT NULL));
