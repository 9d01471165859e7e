-- Dangerous operations are approved, previewed or undoable (issue 22).

-- A close with a delay: the tenant is suspended at once and closed when the window ends, unless an
-- operator cancels it first (the tenant is then put back as it was). One row per close run; at most
-- one scheduled close per tenant at a time.
CREATE TABLE close_schedules (
  run_key        text PRIMARY KEY,
  external_ref   text NOT NULL REFERENCES tenants (external_ref),
  prior_status   text NOT NULL,
  close_at       timestamptz NOT NULL,
  state          text NOT NULL CHECK (state IN ('scheduled', 'cancelled', 'due')),
  requested_by   text NOT NULL,
  cancelled_by   text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX close_schedules_one_scheduled ON close_schedules (external_ref) WHERE state = 'scheduled';

-- The final statement of a tenant, written before the platform close: its transfers, the balance
-- left, its keys (ids, fingerprints, dates), the projects deleted and the audit trail. No secret.
CREATE TABLE close_statements (
  run_key        text PRIMARY KEY,
  external_ref   text NOT NULL REFERENCES tenants (external_ref),
  statement      jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX close_statements_tenant_idx ON close_statements (external_ref, created_at DESC);

-- Four-eyes approvals: an action a policy gates waits here until a second, different operator
-- approves or rejects it, or it expires. The database refuses a self-approval.
CREATE TABLE approval_requests (
  id               text PRIMARY KEY,
  action           text NOT NULL CHECK (action IN ('resolveTransfer', 'keyReveal')),
  external_ref     text NOT NULL REFERENCES tenants (external_ref),
  params           jsonb NOT NULL,
  requested_by     text NOT NULL,
  reason           text NOT NULL,
  state            text NOT NULL CHECK (state IN ('awaiting_approval', 'approved', 'rejected', 'executed')),
  decided_by       text,
  decision_reason  text,
  decided_at       timestamptz,
  expires_at       timestamptz NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  CHECK (decided_by IS NULL OR decided_by <> requested_by),
  CHECK ((state = 'awaiting_approval') = (decided_by IS NULL))
);
CREATE INDEX approval_requests_open_idx ON approval_requests (created_at) WHERE state = 'awaiting_approval';
