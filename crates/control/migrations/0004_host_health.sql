-- Health of registered hosts, checked by every instance: a host that does
-- not answer is not chosen for new sandboxes until it answers again.
ALTER TABLE hosts ADD COLUMN healthy BIGINT NOT NULL DEFAULT 1;
ALTER TABLE hosts ADD COLUMN health_error TEXT;
ALTER TABLE hosts ADD COLUMN checked_at BIGINT;
