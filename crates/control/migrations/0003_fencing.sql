-- Fencing of task forwarding: every claim of a task's forwarding (its
-- start, a takeover after the forwarder's instance went silent, a resume
-- after a restart) increments the lease epoch; a forwarder's appends carry
-- the epoch it claimed and are refused once another claim moved it on.
ALTER TABLE tasks ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
