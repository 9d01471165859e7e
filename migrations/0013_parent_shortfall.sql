-- The parent's insufficient-balance state records how much the platform refused (issue 31): the
-- smallest amount refused since insufficient_since. Transfers smaller than it go ahead; equal or
-- larger ones are held until `tenantctl parent-funded` or until a transfer at least that large,
-- sent after the state was set, succeeds. NULL with insufficient_since set (rows from before this
-- migration, or set by hand): the amount is not known and every amount is held, as before.
ALTER TABLE funding_parent ADD COLUMN insufficient_micro_usd numeric(38, 0) CHECK (insufficient_micro_usd > 0);
ALTER TABLE funding_parent ADD CONSTRAINT funding_parent_insufficient_shape
  CHECK (insufficient_micro_usd IS NULL OR insufficient_since IS NOT NULL);
