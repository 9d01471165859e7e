-- Inbox retention: processed deliveries older than GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS are pruned by
-- the gateway in batches, oldest first; this index is that work list. Rows not yet processed are
-- never pruned (they are not in the index).
CREATE INDEX webhook_inbox_processed_idx ON webhook_inbox (processed_at) WHERE state = 'processed';
