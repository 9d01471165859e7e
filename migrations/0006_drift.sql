-- Drift: where the platform and our records disagree. A finding is identified by its natural key
-- (kind, subject): a later check that sees it again moves last_seen, one that no longer sees it marks
-- it resolved. Findings are never deleted; opening, resolving and fixing are in the audit log too.
CREATE TABLE drift_checks (
  id           bigserial PRIMARY KEY,
  scope        text NOT NULL,
  workflow_id  text NOT NULL,
  state        text NOT NULL CHECK (state IN ('running', 'completed', 'failed')),
  -- Rotation schedules in effect when the check began (ids of unpaused ones), for key_rotation_overdue.
  schedules    jsonb NOT NULL DEFAULT '[]'::jsonb,
  schedules_known boolean NOT NULL DEFAULT false,
  summary      jsonb NOT NULL DEFAULT '{}'::jsonb,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz
);

-- The parent's sub-account list as one check saw it; kept only while the check runs (a large fleet's
-- list would not fit in workflow history).
CREATE TABLE drift_subaccount_snapshot (
  check_id       bigint NOT NULL REFERENCES drift_checks (id),
  subaccount_id  text NOT NULL,
  external_ref   text,
  status         text NOT NULL,
  raw_status     text,
  PRIMARY KEY (check_id, subaccount_id)
);
CREATE INDEX drift_subaccount_snapshot_ref_idx ON drift_subaccount_snapshot (check_id, external_ref);

CREATE TABLE drift_findings (
  id             bigserial PRIMARY KEY,
  kind           text NOT NULL CHECK (kind IN (
                   'subaccount_unrecorded', 'subaccount_mismatch', 'subaccount_gone', 'subaccount_suspended',
                   'subaccount_not_suspended', 'subaccount_not_closed', 'key_orphan', 'key_revoked_on_platform',
                   'key_missing_on_platform', 'key_active_but_revoked', 'transfer_unknown', 'balance_unexplained',
                   'key_rotation_overdue')),
  subject        text NOT NULL,
  -- Not a foreign key: an unrecorded sub-account may carry a ref we have no record of.
  external_ref   text,
  subaccount_id  text,
  evidence       jsonb NOT NULL,
  status         text NOT NULL CHECK (status IN ('open', 'resolved')),
  first_seen     timestamptz NOT NULL DEFAULT now(),
  last_seen      timestamptz NOT NULL DEFAULT now(),
  seen_count     integer NOT NULL DEFAULT 1,
  last_check_id  bigint NOT NULL REFERENCES drift_checks (id),
  resolved_at    timestamptz,
  resolution     text CHECK (resolution IN ('not_seen', 'fixed')),
  fix            text,
  fixed_at       timestamptz,
  UNIQUE (kind, subject)
);
CREATE INDEX drift_findings_open_idx ON drift_findings (kind) WHERE status = 'open';
CREATE INDEX drift_findings_external_ref_idx ON drift_findings (external_ref, status);
