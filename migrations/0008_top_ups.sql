-- Money after onboarding: every transfer is one kind of thing. Top-ups (asked for by a signup backend
-- or an operator) and automatic top-ups go through transfer_intents like the initial funding, with a
-- kind, the caller's idempotency key, who asked and why. Spend caps are reserved by the intent row
-- itself: a top-up counts against its day (UTC) and month from the moment its intent is written until
-- it fails for good; the intent is written in the transaction that checked the caps under row locks.

ALTER TABLE transfer_intents ADD COLUMN kind text NOT NULL DEFAULT 'initial' CHECK (kind IN ('initial', 'top-up', 'auto'));
ALTER TABLE transfer_intents ADD COLUMN caller_key text;
ALTER TABLE transfer_intents ADD COLUMN requested_by text;
ALTER TABLE transfer_intents ADD COLUMN reason text;
ALTER TABLE transfer_intents ADD COLUMN reserved_on date;
-- A top-up refused by a cap is recorded (visible, audited) but never sent.
ALTER TABLE transfer_intents DROP CONSTRAINT transfer_intents_state_check;
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_state_check
  CHECK (state IN ('pending', 'succeeded', 'failed', 'unknown', 'needs_operator', 'cancelled', 'refused'));
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_top_up_shape CHECK (
  kind = 'initial' OR (caller_key IS NOT NULL AND requested_by IS NOT NULL AND reserved_on IS NOT NULL));
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_caller_key_unique UNIQUE (external_ref, caller_key);
-- The cap sums: per tenant per day/month, and per parent per day.
CREATE INDEX transfer_intents_reserved_tenant_idx ON transfer_intents (external_ref, reserved_on) WHERE reserved_on IS NOT NULL;
CREATE INDEX transfer_intents_reserved_day_idx ON transfer_intents (reserved_on) WHERE reserved_on IS NOT NULL;

-- Auto top-up policy per tenant: below `below`, top up to `to`; at most max_per_day (and
-- max_per_month) of top-ups of any kind a day (month).
CREATE TABLE funding_policies (
  external_ref             text PRIMARY KEY REFERENCES tenants (external_ref),
  below_micro_usd          numeric(38, 0) NOT NULL CHECK (below_micro_usd > 0),
  to_micro_usd             numeric(38, 0) NOT NULL,
  max_per_day_micro_usd    numeric(38, 0) NOT NULL CHECK (max_per_day_micro_usd > 0),
  max_per_month_micro_usd  numeric(38, 0) CHECK (max_per_month_micro_usd > 0),
  updated_by               text NOT NULL,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  CHECK (to_micro_usd > below_micro_usd)
);

-- The parent: one row. Its daily cap over every top-up of the fleet, and whether the platform said
-- the parent's own balance is insufficient (the sweep then starts nothing until `parent-funded`).
CREATE TABLE funding_parent (
  id                       boolean PRIMARY KEY DEFAULT true CHECK (id),
  max_per_day_micro_usd    numeric(38, 0) CHECK (max_per_day_micro_usd > 0),
  insufficient_since       timestamptz,
  updated_by               text NOT NULL DEFAULT 'migration',
  updated_at               timestamptz NOT NULL DEFAULT now()
);
INSERT INTO funding_parent (id) VALUES (true);
