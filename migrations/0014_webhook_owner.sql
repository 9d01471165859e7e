-- Registry webhook registrations belong to the identity that made them (issue 31): another caller
-- gets 404 for them unless an admin. NULL: made before identities were recorded; nobody's, so every
-- caller allowed to manage webhooks still sees them.
ALTER TABLE webhook_registrations ADD COLUMN created_by text CHECK (created_by IS NULL OR length(created_by) BETWEEN 1 AND 100);
