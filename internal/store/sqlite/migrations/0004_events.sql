-- 0004_events: the durable event log behind GET /v1/events (package events).
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number: TEXT ids, BIGINT times in UTC microseconds, standard constraints.
-- SQLite-only spots are marked.
--
-- One row per event, in the order the broker committed them. A peer, room
-- or message the event does not name is stored as '' (profile and scope
-- together), so every column is NOT NULL and comparisons need no NULL
-- handling. payload is a JSON object as text; PostgreSQL may keep it as
-- TEXT or jsonb. Events carry no foreign keys: an event about a peer or a
-- room outlives both, and a batch of events must never fail because of a
-- row elsewhere.

-- SQLite-only: "INTEGER PRIMARY KEY AUTOINCREMENT". AUTOINCREMENT makes
-- SQLite never reuse a sequence, even after pruning deletes the newest
-- rows; without it a pruned-empty table would hand out sequences a client
-- already saw, and a client resuming with ?after=SEQ would miss events.
-- PostgreSQL spells this "seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY
-- KEY", which never reuses values either.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

-- Replaying one workspace's events after a sequence, and finding its last.
CREATE INDEX events_workspace_seq ON events (workspace_id, seq);
-- Pruning by age without a table scan.
CREATE INDEX events_created_at ON events (created_at);
