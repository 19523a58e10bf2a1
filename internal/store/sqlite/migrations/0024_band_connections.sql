-- 0024_band_connections: an account's person key and an agent's key live
-- in a connection of provider band. connection_id names it; '' only for a
-- row written before this migration and not moved yet, whose key_sealed
-- still holds the key (empty once the row is moved onto a connection).
--
-- band joins the providers a connection may be of. SQLite cannot change
-- a CHECK in place, so connections is rebuilt, and credential_versions
-- with it (its foreign key must follow the new table): each copy is made
-- first, the old child dropped before the old parent so no foreign key is
-- broken on the way, and the renames point credential_versions' foreign
-- key at the new connections. Rows are copied as they are; the indexes
-- are made again under their names. SQLite-only: the rebuild (PostgreSQL
-- replaces the CHECK constraint in place).

ALTER TABLE accounts ADD COLUMN connection_id TEXT NOT NULL DEFAULT '';
ALTER TABLE peers ADD COLUMN connection_id TEXT NOT NULL DEFAULT '';

CREATE TABLE connections_new (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    provider        TEXT NOT NULL CHECK (provider IN ('github', 'anthropic', 'openai', 'opencode_zen', 'modal', 'band')),
    name            TEXT NOT NULL,
    base_url        TEXT NOT NULL,
    current_version BIGINT NOT NULL CHECK (current_version BETWEEN 1 AND 1000),
    removed_at      BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
INSERT INTO connections_new (id, workspace_id, provider, name, base_url, current_version, removed_at, created_at, updated_at)
SELECT id, workspace_id, provider, name, base_url, current_version, removed_at, created_at, updated_at FROM connections;

CREATE TABLE credential_versions_new (
    connection_id TEXT NOT NULL REFERENCES connections_new (id),
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    version       BIGINT NOT NULL CHECK (version BETWEEN 1 AND 1000),
    secret        BLOB NOT NULL,
    disabled_at   BIGINT,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (connection_id, version)
);
INSERT INTO credential_versions_new (connection_id, workspace_id, version, secret, disabled_at, created_at)
SELECT connection_id, workspace_id, version, secret, disabled_at, created_at FROM credential_versions;

DROP TABLE credential_versions;
DROP TABLE connections;
ALTER TABLE connections_new RENAME TO connections;
ALTER TABLE credential_versions_new RENAME TO credential_versions;

CREATE UNIQUE INDEX connections_live_name ON connections (workspace_id, provider, name) WHERE removed_at IS NULL;
CREATE INDEX connections_by_workspace ON connections (workspace_id, created_at, id);
CREATE UNIQUE INDEX credential_versions_active ON credential_versions (connection_id) WHERE disabled_at IS NULL;
