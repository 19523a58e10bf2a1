-- 0003_retirement (PostgreSQL, same text as SQLite): rooms a peer can no longer act in (the agent was
-- removed from the room, or the room was deleted). Retiring a room deletes
-- its spooled entries, queued rows (routed and unrouted) and its binding in
-- the same transaction that inserts the row here; a message of the room
-- that arrives later is dropped when it leaves the spool. The row goes when
-- the agent is added to the room again.
CREATE TABLE retired_rooms (
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    retired_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, profile, scope, room_id)
);
