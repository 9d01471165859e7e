-- Fencing (issue 44): two attempts of one step can run at the same time (a local activity attempt that outlived
-- its workflow task, an activity whose worker was cut off). Each attempt of a step that creates something on the
-- platform claims a number in its record with a conditional update, and stores its result only while it holds the
-- newest claim; an attempt that lost revokes what it made itself, and an orphan sweep revokes only what older
-- attempts made (they can no longer store it).

-- tenant_keys.create_attempts is the claim of a key's create already (attempt N names its key `...-aN`).
-- A new key that fails its first use (401) is revoked and its record goes back to `creating` for the next attempt,
-- a bounded number of times: counted here.
ALTER TABLE tenant_keys ADD COLUMN rejected_keys integer NOT NULL DEFAULT 0;

-- The parent key's create: attempt N names its key `<key_name>-aN` (a record made before this migration has
-- attempt 0, named `<key_name>` itself).
ALTER TABLE parent_keys ADD COLUMN create_attempts integer NOT NULL DEFAULT 0;

-- Each send of a transfer under an idempotency key, while it is in flight: a definite refusal moves the intent to a
-- fresh key only when no other send under the old key may still be in flight (ended, or claimed longer ago than
-- any attempt lives), so a sibling's late send under the old key can never apply beside one under the new key.
ALTER TABLE transfer_intents ADD COLUMN send_claims integer NOT NULL DEFAULT 0;
CREATE TABLE transfer_sends (
  intent_id        bigint NOT NULL REFERENCES transfer_intents (id),
  claim            integer NOT NULL,
  idempotency_key  text NOT NULL,
  started_at       timestamptz NOT NULL DEFAULT now(),
  ended_at         timestamptz,
  PRIMARY KEY (intent_id, claim)
);
