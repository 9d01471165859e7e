-- Import: sub-accounts that existed before the orchestrator (an earlier script, the console) are brought
-- under its care. One row per imported tenant says where its ref came from and what the wallet held;
-- its existing keys are recorded `unmanaged` (we never saw their tokens), its balance as an `opening`
-- transfer of the ledger. Everything an import writes is written in one transaction.
CREATE TABLE tenant_imports (
  external_ref              text PRIMARY KEY REFERENCES tenants (external_ref),
  subaccount_id             text NOT NULL UNIQUE,
  -- `platform`: the sub-account's own externalRef; `map`: the operator's mapping file.
  ref_source                text NOT NULL CHECK (ref_source IN ('platform', 'map')),
  platform_status           text NOT NULL,
  -- null: the platform showed no balance we could read.
  opening_balance_micro_usd numeric(38, 0) CHECK (opening_balance_micro_usd >= 0),
  -- Transfers the wallet already showed at import (made before us): explained, never drift.
  known_transfer_keys       jsonb NOT NULL DEFAULT '[]'::jsonb,
  known_transfer_ids        jsonb NOT NULL DEFAULT '[]'::jsonb,
  requested_by              text NOT NULL,
  workflow_id               text NOT NULL,
  imported_at               timestamptz NOT NULL DEFAULT now()
);

-- A key that was active when its tenant was imported: recorded, never revoked except by an adoption
-- rotation's quiet gate (or an operator), and never taken for an orphan by drift.
ALTER TABLE tenant_keys DROP CONSTRAINT tenant_keys_status_check;
ALTER TABLE tenant_keys ADD CONSTRAINT tenant_keys_status_check
  CHECK (status IN ('creating', 'active', 'revoking', 'revoked', 'failed', 'unmanaged'));

-- The wallet's balance at import, as a settled entry of the ledger (nothing was sent: no caps, no caller key).
ALTER TABLE transfer_intents DROP CONSTRAINT transfer_intents_kind_check;
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_kind_check
  CHECK (kind IN ('initial', 'top-up', 'auto', 'opening'));
ALTER TABLE transfer_intents DROP CONSTRAINT transfer_intents_top_up_shape;
ALTER TABLE transfer_intents ADD CONSTRAINT transfer_intents_top_up_shape CHECK (
  kind IN ('initial', 'opening') OR (caller_key IS NOT NULL AND requested_by IS NOT NULL AND reserved_on IS NOT NULL));

-- Drift reports unmanaged keys (not orphans: we know them, we just do not hold their tokens).
ALTER TABLE drift_findings DROP CONSTRAINT drift_findings_kind_check;
ALTER TABLE drift_findings ADD CONSTRAINT drift_findings_kind_check CHECK (kind IN (
  'subaccount_unrecorded', 'subaccount_mismatch', 'subaccount_gone', 'subaccount_suspended',
  'subaccount_not_suspended', 'subaccount_not_closed', 'key_orphan', 'key_revoked_on_platform',
  'key_missing_on_platform', 'key_active_but_revoked', 'transfer_unknown', 'balance_unexplained',
  'key_rotation_overdue', 'key_unmanaged'));
