-- 0009_session_messages (PostgreSQL, the SQLite dialect's text): the accepted input of owned sessions. A session
-- message is one immutable piece of authored input with its routing: note
-- (context for the next turn, no turn of its own), queue (a turn answers
-- it) or steer (input for the running turn; recorded as queue when the
-- harness cannot take it). requested is what the author asked for, routing
-- what happened. A Band message routed to an owned session is recorded as
-- a queue message naming it in source_message_id; its text stays sealed
-- with the Band message, so text is empty here. turn_id is the turn the
-- message belongs to: for queue the turn that answers it, for steer the
-- running turn it reached, for note the turn that consumed it (empty until
-- then; consumed_at is set in the transaction that moves that turn to
-- running).
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number.

CREATE TABLE session_messages (
    id                TEXT PRIMARY KEY,
    workspace_id      TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    seq               BIGINT NOT NULL,
    requested         TEXT NOT NULL,
    routing           TEXT NOT NULL,
    text              TEXT NOT NULL,
    source_message_id TEXT NOT NULL,
    turn_id           TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    consumed_at       BIGINT,
    UNIQUE (session_id, seq)
);

-- A turn names the session message it answers ('' for turns recorded
-- before session messages existed).
ALTER TABLE turns ADD COLUMN message_id TEXT NOT NULL DEFAULT '';
