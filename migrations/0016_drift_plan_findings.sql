-- Drift reports a tenant that differs from its plan (issue 33): three report-only kinds. The fix is the
-- plan's rollout or assignment, never drift.
ALTER TABLE drift_findings DROP CONSTRAINT drift_findings_kind_check;
ALTER TABLE drift_findings ADD CONSTRAINT drift_findings_kind_check CHECK (kind IN (
  'subaccount_unrecorded', 'subaccount_mismatch', 'subaccount_gone', 'subaccount_suspended',
  'subaccount_not_suspended', 'subaccount_not_closed', 'key_orphan', 'key_revoked_on_platform',
  'key_missing_on_platform', 'key_active_but_revoked', 'transfer_unknown', 'balance_unexplained',
  'key_rotation_overdue', 'key_unmanaged', 'plan_slot_missing', 'plan_policy_differs', 'plan_schedule_differs'));

-- The tenant rotation schedules (rotation:<ref>:<slot>) as one check's single listing saw them, with their
-- interval, so each tenant's comparison reads its own rows instead of asking Temporal per slot. Kept only
-- while the check runs, like the sub-account snapshot.
CREATE TABLE drift_schedule_snapshot (
  check_id     bigint NOT NULL REFERENCES drift_checks (id),
  schedule_id  text NOT NULL,
  -- The schedule's one interval in ms; NULL when the listing showed none, or more than one spec.
  every_ms     bigint,
  paused       boolean NOT NULL,
  PRIMARY KEY (check_id, schedule_id)
);
