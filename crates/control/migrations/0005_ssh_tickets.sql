-- SSH relay tickets: single-use, short-lived, stored only as a SHA-256
-- hash, bound to one sandbox and to the user (and credential) that asked.
CREATE TABLE ssh_tickets (
    ticket_hash TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    credential_id TEXT NOT NULL REFERENCES credentials (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX ssh_tickets_by_expiry ON ssh_tickets (expires_at);

-- The relay's host key (OpenSSH format), sealed with the control plane's
-- secret key; made once and shared by every instance.
CREATE TABLE ssh_host_keys (
    id TEXT PRIMARY KEY,
    sealed_key TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
