-- Schema v1: the parent's own records of its tenants. Money is numeric(38,0) micro-USD, never float.
-- No plaintext secret is ever stored: key_secrets holds AES-256-GCM sealed values only.

CREATE TABLE tenants (
  external_ref            text PRIMARY KEY CHECK (external_ref ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
  name                    text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  subaccount_id           text UNIQUE,
  status                  text NOT NULL,
  create_idempotency_key  text NOT NULL UNIQUE,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tenants_status_idx ON tenants (status);

CREATE TABLE transfer_intents (
  id                        bigserial PRIMARY KEY,
  external_ref              text NOT NULL REFERENCES tenants (external_ref),
  purpose                   text NOT NULL,
  amount_micro_usd          numeric(38, 0) NOT NULL CHECK (amount_micro_usd > 0),
  idempotency_key           text NOT NULL UNIQUE,
  state                     text NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed', 'unknown', 'needs_operator', 'cancelled')),
  platform_transfer_id      text,
  failure_code              text,
  balance_before_micro_usd  numeric(38, 0),
  attempts                  integer NOT NULL DEFAULT 0,
  created_at                timestamptz NOT NULL DEFAULT now(),
  updated_at                timestamptz NOT NULL DEFAULT now(),
  UNIQUE (external_ref, purpose)
);
CREATE INDEX transfer_intents_state_idx ON transfer_intents (state) WHERE state IN ('pending', 'unknown', 'needs_operator');

CREATE TABLE tenant_keys (
  id               bigserial PRIMARY KEY,
  external_ref     text NOT NULL REFERENCES tenants (external_ref),
  slot             text NOT NULL CHECK (slot ~ '^[a-z0-9][a-z0-9-]{0,31}$'),
  generation       integer NOT NULL CHECK (generation >= 1),
  key_name         text NOT NULL UNIQUE,
  platform_key_id  text UNIQUE,
  status           text NOT NULL CHECK (status IN ('creating', 'active', 'revoking', 'revoked', 'failed')),
  fingerprint      text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  activated_at     timestamptz,
  revoked_at       timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (external_ref, slot, generation)
);

CREATE TABLE key_secrets (
  tenant_key_id  bigint PRIMARY KEY REFERENCES tenant_keys (id),
  master_key_id  text NOT NULL,
  sealed         text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_log (
  id            bigserial PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  actor         text NOT NULL,
  action        text NOT NULL,
  external_ref  text,
  subject       text,
  details       jsonb NOT NULL DEFAULT '{}'::jsonb,
  workflow_id   text,
  run_id        text
);
CREATE INDEX audit_log_external_ref_idx ON audit_log (external_ref, id);

-- The audit log is append-only: updates, deletes and truncation are refused by the database itself.
CREATE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
