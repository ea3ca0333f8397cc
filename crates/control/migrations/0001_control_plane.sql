-- The control plane's state. Portable between SQLite and PostgreSQL:
-- TEXT ids (UUIDs), BIGINT numbers and flags, times in Unix milliseconds.

CREATE TABLE tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    max_running_tasks BIGINT NOT NULL,
    running_tasks BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL,
    permissions TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (tenant_id, name)
);

-- Customer access tokens (kind 'token') and workspace API keys (kind 'key'),
-- stored as SHA-256 hashes of their secret.
CREATE TABLE credentials (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    secret_hash TEXT NOT NULL UNIQUE,
    grants TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);

-- Registered remote agent servers; their session key sealed with the
-- control plane's secret key.
CREATE TABLE hosts (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    sealed_key TEXT NOT NULL,
    workspace_root TEXT NOT NULL,
    enabled BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL
);

CREATE TABLE sandboxes (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL,
    placement TEXT NOT NULL,
    host_id TEXT,
    owner_instance TEXT NOT NULL,
    url TEXT,
    sealed_key TEXT,
    working_dir TEXT NOT NULL,
    sealed_llm TEXT,
    llm_model TEXT,
    status TEXT NOT NULL,
    current_task_id TEXT,
    task_busy BIGINT NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT
);
CREATE INDEX sandboxes_by_tenant ON sandboxes (tenant_id, created_at);
CREATE INDEX sandboxes_by_host ON sandboxes (host_id);

CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    owner_user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    stream_id TEXT NOT NULL,
    status TEXT NOT NULL,
    ended BIGINT NOT NULL DEFAULT 0,
    exit_code BIGINT,
    exit_seq BIGINT,
    next_seq BIGINT NOT NULL DEFAULT 0,
    output_bytes BIGINT NOT NULL DEFAULT 0,
    kept_from_seq BIGINT NOT NULL DEFAULT 1,
    pump_instance TEXT,
    pump_heartbeat BIGINT,
    last_event_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ended_at BIGINT
);
CREATE INDEX tasks_by_sandbox ON tasks (sandbox_id);
CREATE INDEX tasks_running ON tasks (ended, pump_heartbeat);

-- Retained output of a task: one row per chunk, `seq` increasing.
CREATE TABLE task_output (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    seq BIGINT NOT NULL,
    stream TEXT NOT NULL,
    data TEXT NOT NULL,
    size BIGINT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
