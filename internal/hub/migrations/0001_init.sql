-- The hub's schema. Times are INTEGER UTC microseconds. Every table with a
-- keyset-paginated listing has an INTEGER PRIMARY KEY "seq": insertion
-- order, stable across restarts, and the tie-breaker of every cursor.

CREATE TABLE users (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    email       TEXT NOT NULL UNIQUE,
    handle      TEXT NOT NULL UNIQUE,
    first_name  TEXT NOT NULL DEFAULT '',
    last_name   TEXT NOT NULL DEFAULT '',
    inserted_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- Deleted agents keep their row (deleted_at set) so old messages still
-- name their sender; their keys and memberships are gone.
CREATE TABLE agents (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    owner_id    TEXT NOT NULL REFERENCES users (id),
    name        TEXT NOT NULL,
    slug        TEXT NOT NULL,
    description TEXT,
    inserted_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    deleted_at  INTEGER
);
CREATE UNIQUE INDEX agents_owner_slug ON agents (owner_id, slug) WHERE deleted_at IS NULL;

-- Keys are stored as the hex SHA-256 of the key text; a key is 32 random
-- bytes, so no slow hash is needed.
CREATE TABLE api_keys (
    key_hash    TEXT PRIMARY KEY,
    user_id     TEXT REFERENCES users (id),
    agent_id    TEXT REFERENCES agents (id),
    inserted_at INTEGER NOT NULL,
    CHECK ((user_id IS NULL) <> (agent_id IS NULL))
);
CREATE INDEX api_keys_agent ON api_keys (agent_id);

CREATE TABLE rooms (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    title           TEXT,
    title_locked    INTEGER NOT NULL DEFAULT 0,
    task_id         TEXT,
    type            TEXT NOT NULL,
    status          TEXT NOT NULL,
    inserted_at     INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_message_at INTEGER
);

-- participant_id is a user id or an agent id, as participant_type says.
CREATE TABLE participants (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id          TEXT NOT NULL REFERENCES rooms (id),
    participant_id   TEXT NOT NULL,
    participant_type TEXT NOT NULL CHECK (participant_type IN ('User', 'Agent')),
    role             TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    inserted_at      INTEGER NOT NULL,
    UNIQUE (room_id, participant_id)
);
CREATE INDEX participants_identity ON participants (participant_id);

-- mentions is the JSON of metadata.mentions; extra the free-form metadata
-- of an event.
CREATE TABLE messages (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    room_id      TEXT NOT NULL REFERENCES rooms (id),
    sender_id    TEXT NOT NULL,
    sender_type  TEXT NOT NULL,
    message_type TEXT NOT NULL,
    content      TEXT NOT NULL,
    mentions     TEXT NOT NULL DEFAULT '[]',
    extra        TEXT,
    inserted_at  INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX messages_room ON messages (room_id, seq);
CREATE INDEX messages_sender ON messages (room_id, sender_id, seq);

-- One delivery per (text message, mentioned agent): the agent's queue.
CREATE TABLE deliveries (
    message_seq     INTEGER NOT NULL REFERENCES messages (seq),
    agent_id        TEXT NOT NULL,
    room_id         TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('delivered', 'processing', 'processed', 'failed')),
    current_attempt INTEGER NOT NULL DEFAULT 0,
    delivered_at    INTEGER NOT NULL,
    processed_at    INTEGER,
    PRIMARY KEY (agent_id, message_seq)
);
CREATE INDEX deliveries_queue ON deliveries (agent_id, room_id, message_seq);
CREATE INDEX deliveries_message ON deliveries (message_seq);

-- Every POST …/processing opens a new attempt.
CREATE TABLE attempts (
    message_seq    INTEGER NOT NULL,
    agent_id       TEXT NOT NULL,
    attempt_number INTEGER NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('processing', 'success', 'failed')),
    error          TEXT,
    started_at     INTEGER NOT NULL,
    completed_at   INTEGER,
    PRIMARY KEY (agent_id, message_seq, attempt_number),
    FOREIGN KEY (agent_id, message_seq) REFERENCES deliveries (agent_id, message_seq)
);
CREATE INDEX attempts_message ON attempts (message_seq);
