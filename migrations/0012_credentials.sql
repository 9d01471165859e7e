-- Credentials (issue 18). The parent's own platform key (svpk_) lives sealed here like tenant secrets:
-- PLATFORM_API_KEY is only a bootstrap, imported once. Exactly one key is `current` (the one every
-- process uses); a rotation's new key is `ready` (sealed, not yet used) until it is made current, and the old
-- one is then `previous` until it is revoked. The platform's key id
-- may be unknown for an imported key (the contract's list does not say which key made the call).
CREATE TABLE parent_keys (
  id               bigserial PRIMARY KEY,
  platform_key_id  text UNIQUE,
  key_name         text NOT NULL UNIQUE,
  status           text NOT NULL CHECK (status IN ('creating', 'ready', 'current', 'previous', 'revoked', 'failed')),
  source           text NOT NULL CHECK (source IN ('import', 'rotation')),
  fingerprint      text,
  master_key_id    text,
  sealed           text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  current_since    timestamptz,
  revoked_at       timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK (status IN ('creating', 'failed') OR (sealed IS NOT NULL AND fingerprint IS NOT NULL))
);
CREATE UNIQUE INDEX parent_keys_one_current ON parent_keys ((true)) WHERE status = 'current';
CREATE UNIQUE INDEX parent_keys_fingerprint ON parent_keys (fingerprint) WHERE fingerprint IS NOT NULL;

-- Which parent key each live process (worker, gateway) uses, refreshed on a short interval. A parent key
-- rotation waits until every process that still reports has switched; one that stops reporting (stale
-- seen_at) is not waited for.
CREATE TABLE process_credentials (
  process_id     text PRIMARY KEY CHECK (length(process_id) BETWEEN 1 AND 200),
  kind           text NOT NULL CHECK (kind IN ('worker', 'gateway', 'cli')),
  parent_key_id  bigint REFERENCES parent_keys (id),
  started_at     timestamptz NOT NULL DEFAULT now(),
  seen_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX process_credentials_seen_idx ON process_credentials (seen_at);
