-- 0008_quarantine (PostgreSQL): spool entries and queue rows that can no
-- longer be read, moved here in the transaction that deletes them from
-- their table. The same schema as the SQLite dialect's 0008, which
-- explains each column; id is an identity column, sealed is BYTEA.
CREATE TABLE quarantine (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    source         TEXT NOT NULL CHECK (source IN ('spool', 'queue')),
    seq            BIGINT NOT NULL,
    profile        TEXT NOT NULL,
    scope          TEXT NOT NULL,
    room_id        TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    reason         TEXT NOT NULL,
    row_json       TEXT NOT NULL,
    sealed         BYTEA NOT NULL,
    quarantined_at BIGINT NOT NULL
);

CREATE INDEX quarantine_workspace ON quarantine (workspace_id, id);
