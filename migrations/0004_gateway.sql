-- Gateway: registry webhook registrations (our receiver routes), their sealed signing secrets, and the
-- inbox of verified deliveries (delivery id unique: a redelivery is recorded once and processed once).

-- One receiver route per registration: /webhooks/registry/<id>. The id is ours, so the URL is known
-- before the platform assigns a webhook id, and it survives a replacement (secret rotation).
CREATE TABLE webhook_registrations (
  id            text PRIMARY KEY CHECK (id ~ '^whr_[A-Za-z0-9]{8,64}$'),
  external_ref  text REFERENCES tenants (external_ref),
  project_id    text NOT NULL,
  label         text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
  url           text NOT NULL UNIQUE,
  events        text[] NOT NULL CHECK (cardinality(events) > 0),
  status        text NOT NULL CHECK (status IN ('creating', 'active', 'replacing', 'deleted')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  deleted_at    timestamptz
);
CREATE INDEX webhook_registrations_external_ref_idx ON webhook_registrations (external_ref);

-- Signing secrets, sealed with the vault (AAD names the registration and generation); never plaintext.
-- 'pending': sealed before the platform call that sends it; 'current': the live webhook's;
-- 'previous': the replaced webhook's, still accepted until retired_at plus a grace period.
CREATE TABLE webhook_secrets (
  registration_id  text NOT NULL REFERENCES webhook_registrations (id),
  generation       integer NOT NULL CHECK (generation >= 1),
  webhook_id       text UNIQUE,
  state            text NOT NULL CHECK (state IN ('pending', 'current', 'previous', 'abandoned')),
  sealed           text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  retired_at       timestamptz,
  PRIMARY KEY (registration_id, generation)
);

CREATE TABLE webhook_inbox (
  delivery_id      text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 200),
  registration_id  text NOT NULL REFERENCES webhook_registrations (id),
  webhook_id       text NOT NULL,
  event            text NOT NULL,
  known_event      boolean NOT NULL,
  body             jsonb NOT NULL,
  body_sha256      text NOT NULL,
  state            text NOT NULL CHECK (state IN ('pending', 'started', 'processed')),
  workflow_id      text NOT NULL,
  start_attempts   integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  last_start_error text,
  received_at      timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  processed_at     timestamptz,
  process_count    integer NOT NULL DEFAULT 0,
  outcome          jsonb
);
-- The sweeper's work list: deliveries whose workflow has not been started yet.
CREATE INDEX webhook_inbox_pending_idx ON webhook_inbox (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_inbox_registration_idx ON webhook_inbox (registration_id, received_at);
