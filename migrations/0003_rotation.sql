-- Key rotation: one row per rotation of a slot (old generation -> new generation). At most one open
-- rotation per slot, enforced here as well as by the workflow id, so a manual run, a schedule and a
-- fleet run can never interleave on one slot. The row is what `tenantctl status` and a closing
-- tenant read; the workflow's query has the live detail.
CREATE TABLE key_rotations (
  id               bigserial PRIMARY KEY,
  external_ref     text NOT NULL REFERENCES tenants (external_ref),
  slot             text NOT NULL,
  from_generation  integer NOT NULL CHECK (from_generation >= 1),
  to_generation    integer NOT NULL CHECK (to_generation > from_generation),
  state            text NOT NULL CHECK (state IN ('running', 'held', 'key_limit', 'completed', 'aborted', 'cancelled', 'failed')),
  stage            text NOT NULL DEFAULT 'creating_key',
  emergency        boolean NOT NULL DEFAULT false,
  deployer         text NOT NULL,
  workflow_id      text NOT NULL,
  run_id           text,
  deployed_at      timestamptz,
  finished_at      timestamptz,
  outcome          jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (external_ref, slot, to_generation)
);
CREATE UNIQUE INDEX key_rotations_one_open_per_slot ON key_rotations (external_ref, slot)
  WHERE state IN ('running', 'held', 'key_limit');
CREATE INDEX key_rotations_external_ref_idx ON key_rotations (external_ref, id);
