-- 0022_connections (PostgreSQL): external authorities of a workspace and their
-- credentials. A connection's secret lives only in credential_versions,
-- which are append-only: a rotation inserts version current_version + 1
-- (taken from the connection row it updates, so rotations serialize on
-- that row) and disables the active one in the same transaction; a
-- removal marks the connection removed and disables its active version.
-- The partial unique indexes keep at most one active version per
-- connection and one live connection per workspace, provider and name (a
-- removed connection's name can be taken again). secret is sealed with the
-- daemon key, its aad naming the workspace, the connection and the
-- version. Times are UTC microseconds; removed_at and disabled_at are NULL
-- while the row is live.

CREATE TABLE connections (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    provider        TEXT NOT NULL CHECK (provider IN ('github', 'anthropic', 'openai', 'opencode_zen', 'modal')),
    name            TEXT NOT NULL,
    base_url        TEXT NOT NULL,
    current_version BIGINT NOT NULL CHECK (current_version BETWEEN 1 AND 1000),
    removed_at      BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE UNIQUE INDEX connections_live_name ON connections (workspace_id, provider, name) WHERE removed_at IS NULL;
CREATE INDEX connections_by_workspace ON connections (workspace_id, created_at, id);

CREATE TABLE credential_versions (
    connection_id TEXT NOT NULL REFERENCES connections (id),
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    version       BIGINT NOT NULL CHECK (version BETWEEN 1 AND 1000),
    secret        BYTEA NOT NULL,
    disabled_at   BIGINT,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (connection_id, version)
);

CREATE UNIQUE INDEX credential_versions_active ON credential_versions (connection_id) WHERE disabled_at IS NULL;
