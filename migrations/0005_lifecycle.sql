-- Lifecycle: why a tenant is in its status, and what a close left behind. Closed tenants keep their
-- records (and their history in the audit log) for good.
ALTER TABLE tenants ADD COLUMN status_reason text;
ALTER TABLE tenants ADD COLUMN closed_at timestamptz;
ALTER TABLE tenants ADD COLUMN closed_balance_micro_usd numeric(38, 0);
