-- 0011_turn_output (PostgreSQL, the SQLite dialect's text): a turn's streamed output (text, thinking, tool calls,
-- plans), one row per batch as the runtime publishes it, so the output of
-- a turn outlives the daemon that ran it. batch numbers a turn's batches
-- from 1 and rises; a batch that kept nothing is not stored, so numbers
-- may skip. updates is the batch as a JSON array. text_bytes and
-- stored_bytes are running totals over the turn up to this batch, which
-- bound what one turn can store without summing its rows; truncated says
-- that output of this batch or an earlier one was not kept.
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number: TEXT ids, BIGINT times in UTC microseconds, standard constraints.

CREATE TABLE turn_output (
    workspace_id TEXT NOT NULL,
    turn_id      TEXT NOT NULL,
    batch        BIGINT NOT NULL,
    updates      TEXT NOT NULL,
    text_bytes   BIGINT NOT NULL,
    stored_bytes BIGINT NOT NULL,
    truncated    BOOLEAN NOT NULL,
    at           BIGINT NOT NULL,
    PRIMARY KEY (turn_id, batch)
);
