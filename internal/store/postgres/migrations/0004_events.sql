-- 0004_events (PostgreSQL): the durable event log behind GET /v1/events
-- (package events). The same schema as the SQLite dialect's 0004, which
-- explains each column; seq is an identity column where SQLite uses
-- AUTOINCREMENT, and neither reuses a value after pruning. PostgreSQL
-- hands out identity values at insert, not at commit, so the store orders
-- appends itself (see events.go): a reader never sees a sequence appear
-- below one it already read.
CREATE TABLE events (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

CREATE INDEX events_workspace_seq ON events (workspace_id, seq);
CREATE INDEX events_created_at ON events (created_at);
