-- 0005_room_cache (PostgreSQL): the human room feed's cache (package roomfeed). Per
-- (account, room): the room sequence watermark, the retained window of
-- sealed messages, the local membership system rows, and the attention
-- items staged for direct mentions of the account's person.
--
-- The same schema as the SQLite dialect's 0005, with BYTEA for BLOB.
--
-- Rows are keyed by the account id rather than its profile: the cache
-- belongs to the signed-in person, and no foreign keys are declared, like
-- the pipeline tables, because the feed only writes for accounts it was
-- started for (the store checks the account when a room's state is first
-- created).

-- The watermark: the highest room sequence written. A write at or below it
-- is refused, so a late or replayed write can never regress the cache. The
-- row outlives a retired room, so a room that comes back never reuses a
-- sequence.
CREATE TABLE room_cache_state (
    workspace_id TEXT NOT NULL,
    account_id   TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, account_id, room_id)
);

-- The retained window: the newest messages of a room by (inserted_at,
-- message_id), sealed. seq is the room sequence of the item's last change.
CREATE TABLE room_cache_items (
    workspace_id TEXT NOT NULL,
    account_id   TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    inserted_at  BIGINT NOT NULL,
    sealed       BYTEA NOT NULL,
    PRIMARY KEY (workspace_id, account_id, room_id, message_id)
);

-- Reading and trimming a room's window newest first.
CREATE INDEX room_cache_items_window ON room_cache_items (workspace_id, account_id, room_id, inserted_at, message_id);

-- Membership rows jam synthesized because Band announced a join without a
-- durable row; capped per room.
CREATE TABLE room_system_messages (
    workspace_id   TEXT NOT NULL,
    account_id     TEXT NOT NULL,
    room_id        TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    participant_id TEXT NOT NULL,
    inserted_at    BIGINT NOT NULL,
    sealed         BYTEA NOT NULL,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, account_id, room_id, message_id)
);

CREATE INDEX room_system_messages_room ON room_system_messages (workspace_id, account_id, room_id, inserted_at, message_id);

-- One item per message that asks for the person's attention; staged in the
-- transaction that writes the message. Holds no content.
CREATE TABLE attention_items (
    workspace_id TEXT NOT NULL,
    account_id   TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    sender_id    TEXT NOT NULL,
    kind         TEXT NOT NULL,
    message_at   BIGINT NOT NULL,
    staged_at    BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, account_id, message_id)
);

-- Listing and trimming an account's items newest staged first.
CREATE INDEX attention_items_staged ON attention_items (workspace_id, account_id, staged_at, message_id);
