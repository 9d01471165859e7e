-- Onboarding: how many times the sub-account create was attempted (a later attempt looks the tenant
-- up by external ref before any new create), and when a key was verified against the platform.
ALTER TABLE tenants ADD COLUMN create_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD CONSTRAINT tenants_status_check
  CHECK (status IN ('creating', 'created', 'active', 'cancelled', 'failed', 'suspended', 'closing', 'closed'));
ALTER TABLE tenant_keys ADD COLUMN create_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE tenant_keys ADD COLUMN verified_at timestamptz;
ALTER TABLE transfer_intents ADD COLUMN unknown_since timestamptz;
ALTER TABLE transfer_intents ADD COLUMN resolution text;
-- Key names are unique per tenant (the platform lists keys per tenant), not across tenants.
ALTER TABLE tenant_keys DROP CONSTRAINT tenant_keys_key_name_key;
ALTER TABLE tenant_keys ADD CONSTRAINT tenant_keys_tenant_key_name_key UNIQUE (external_ref, key_name);
