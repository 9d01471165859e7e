-- Lifecycle events for the parent's systems: a transactional outbox, subscriptions with sealed
-- signing secrets, and one delivery row per (subscription, event).
--
-- Order per tenant: every event of a stream (a tenant's external ref, or '' for parent-wide events)
-- takes the next `seq` of its stream by updating the stream's row in the transaction that writes the
-- change. That row lock is held to COMMIT, so within a stream seq order is commit order: a reader that
-- sees seq n committed has seen every seq below it.

CREATE TABLE event_streams (
  stream    text PRIMARY KEY,
  last_seq  bigint NOT NULL
);

CREATE TABLE event_outbox (
  id             bigserial PRIMARY KEY,
  type           text NOT NULL CHECK (type ~ '^[a-z_]+\.[a-z_]+$'),
  stream         text NOT NULL REFERENCES event_streams (stream),
  seq            bigint NOT NULL,
  external_ref   text,
  payload        jsonb NOT NULL,
  occurred_at    timestamptz NOT NULL DEFAULT now(),
  -- Set once the event's delivery rows exist and their stream workflows were told.
  dispatched_at  timestamptz,
  UNIQUE (stream, seq)
);
CREATE INDEX event_outbox_undispatched_idx ON event_outbox (id) WHERE dispatched_at IS NULL;
CREATE INDEX event_outbox_occurred_idx ON event_outbox (occurred_at);

-- Wakes the dispatcher when an event commits (NOTIFY is transactional: nothing for a rollback).
CREATE FUNCTION event_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('event_outbox', '');
  RETURN NULL;
END;
$$;
CREATE TRIGGER event_outbox_notify AFTER INSERT ON event_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION event_outbox_notify();

CREATE TABLE event_subscriptions (
  id          text PRIMARY KEY,
  url         text NOT NULL,
  -- '{*}' = every type.
  types       text[] NOT NULL CHECK (cardinality(types) > 0),
  label       text NOT NULL DEFAULT '',
  status      text NOT NULL CHECK (status IN ('active', 'deleted')),
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
-- One live subscription per (url, types): a second identical subscribe is refused.
CREATE UNIQUE INDEX event_subscriptions_live_unique ON event_subscriptions (url, types) WHERE status = 'active';

-- Signing secrets, sealed in the vault. During a rotation the previous one signs too, until expires_at.
CREATE TABLE event_subscription_secrets (
  subscription_id  text NOT NULL REFERENCES event_subscriptions (id),
  generation       integer NOT NULL CHECK (generation >= 1),
  sealed           text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz,
  PRIMARY KEY (subscription_id, generation)
);

CREATE TABLE event_deliveries (
  id               bigserial PRIMARY KEY,
  subscription_id  text NOT NULL REFERENCES event_subscriptions (id),
  event_id         bigint NOT NULL REFERENCES event_outbox (id),
  stream           text NOT NULL,
  seq              bigint NOT NULL,
  state            text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  last_status      integer,
  last_error       text,
  replays          integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  first_attempt_at timestamptz,
  delivered_at     timestamptz,
  failed_at        timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (subscription_id, event_id)
);
CREATE INDEX event_deliveries_next_idx ON event_deliveries (subscription_id, stream, seq) WHERE state = 'pending';
CREATE INDEX event_deliveries_state_idx ON event_deliveries (state, id);

-- wallet.low_balance: a threshold per tenant (else EVENTS_LOW_BALANCE_MICRO_USD), and whether the
-- alert is raised (one event per crossing, cleared when the balance is back above).
CREATE TABLE wallet_alerts (
  external_ref             text PRIMARY KEY REFERENCES tenants (external_ref),
  threshold_micro_usd      numeric(38, 0) CHECK (threshold_micro_usd > 0),
  low_since                timestamptz,
  updated_at               timestamptz NOT NULL DEFAULT now()
);
