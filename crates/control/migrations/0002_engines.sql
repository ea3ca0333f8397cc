-- Engine-neutral sandbox state: which engine runs a sandbox (`local`,
-- `docker`, `host`) and the engine's own id for it (a local agent server's
-- process group, a container id, a registered host's id), so any instance
-- can find, reach and release it; why a sandbox was lost.
ALTER TABLE sandboxes ADD COLUMN engine TEXT;
ALTER TABLE sandboxes ADD COLUMN engine_id TEXT;
ALTER TABLE sandboxes ADD COLUMN status_reason TEXT;
UPDATE sandboxes SET engine = placement WHERE engine IS NULL;
