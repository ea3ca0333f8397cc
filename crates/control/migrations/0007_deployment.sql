-- The deployment's identity: a random id made once and shared by every
-- instance on this database. Engines label what they create with it, so a
-- control plane removes only its own deployment's stray containers and
-- services, never another's on the same daemon.
CREATE TABLE deployment (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
