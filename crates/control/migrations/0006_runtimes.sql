-- Runtimes of the OpenHands Runtime API (`/v1/runtime`) are sandboxes:
-- the client's session id (one live runtime per tenant and session id)
-- and what the start request asked of the engine (image, environment,
-- user, runtime class, pull policy), sealed as JSON because the
-- environment may hold secrets, so a sandbox provisioned again gets the
-- same.
ALTER TABLE sandboxes ADD COLUMN runtime_session TEXT;
ALTER TABLE sandboxes ADD COLUMN sealed_runtime TEXT;
CREATE UNIQUE INDEX sandboxes_runtime_session ON sandboxes (tenant_id, runtime_session)
    WHERE runtime_session IS NOT NULL AND status <> 'deleted';
