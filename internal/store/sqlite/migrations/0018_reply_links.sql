-- 0018_reply_links: which message each posted reply answers. The engine
-- writes one row per posted part, after Band accepted it: message_id is
-- the posted part's Band id, reply_to the source message it answers, and
-- turn_id the owned session's turn that produced it ('' for an attached
-- agent's reply). A row is never rewritten; it outlives the reply intent
-- (which retention prunes) so the room feed can link a reply for as long
-- as it shows it. Removing a peer deletes its rows.
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number.

CREATE TABLE reply_links (
    workspace_id TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    reply_to     TEXT NOT NULL,
    turn_id      TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, message_id)
);
