-- 0001_init: workspaces, their settings, and the daemon run log.
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number: TEXT ids, BIGINT times in UTC microseconds, standard constraints.
-- SQLite-only spots are marked.

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

-- SQLite-only: "INTEGER PRIMARY KEY" aliases the rowid, so SQLite assigns
-- increasing ids itself. PostgreSQL spells this
-- "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY". Rows are never
-- deleted, so ids are never reused and "highest id" means "latest run".
CREATE TABLE daemon_runs (
    id         INTEGER PRIMARY KEY,
    node       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    version    TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    stopped_at BIGINT
);

CREATE INDEX daemon_runs_node_id ON daemon_runs (node, id);
