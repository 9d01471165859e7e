-- New money held after a restore of the records (issue 48). When a run or the gateway finds that the records went
-- back in time for a tenant (a record its run wrote is gone, or a top-up run Temporal shows completed has no record),
-- the tenant's new top-ups wait until a drift check of the tenant has run since, with no money finding left open: the
-- drift check records the transfers the restore lost, so the caps and the next top-up read the wallet's true books.
ALTER TABLE tenants ADD COLUMN money_held_since timestamptz;
ALTER TABLE tenants ADD COLUMN money_hold_reason text;
