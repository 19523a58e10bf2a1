-- 0001_init (PostgreSQL): workspaces, their settings, and the daemon run
-- log. The same schema as the SQLite dialect's 0001 (which explains each
-- table): TEXT ids, BIGINT times in UTC microseconds. Differs only where
-- SQLite aliases the rowid: daemon_runs.id is an identity column. Rows are
-- never deleted, so ids are never reused and "highest id" means "latest run".

CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE settings (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, key)
);

CREATE TABLE daemon_runs (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    node       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    version    TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    stopped_at BIGINT
);

CREATE INDEX daemon_runs_node_id ON daemon_runs (node, id);
