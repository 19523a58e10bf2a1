-- 0015_sealed_content: the columns that hold what a person or an agent
-- wrote are sealed at rest. events.payload, turn_output.updates,
-- session_messages.text and the detail of turns and turn_journal (the
-- text of the error that ended a turn, which may quote what the agent
-- sent) become BLOB: the store seals each value with the
-- daemon key (package secret, AES-256-GCM) bound to its row (workspace,
-- table and the row's key), and opens it when read. An empty value (an
-- event without data, a session message whose text stays sealed with its
-- Band message) is stored as before, in the clear, since it says nothing.
--
-- Each table is rebuilt with the new column type (a detail column, added
-- by 0014, is replaced by a new one) and its rows copied as they are: BLOB affinity keeps a copied TEXT value as TEXT, which is how
-- the store tells a row written before this migration from a sealed one.
-- The store seals such rows in Go when it next opens with the key, in one
-- transaction with secure_delete on, so the plaintext does not linger in
-- free pages.
--
-- events keeps its AUTOINCREMENT high-water mark across the rebuild: the
-- copy would otherwise restart after the highest kept row, and a client
-- resuming after a pruned sequence would miss events.
--
-- Written so the PostgreSQL dialect can keep the same columns (BYTEA) under
-- the same number. SQLite-only spots: the rebuild itself (PostgreSQL
-- alters the column type in place) and sqlite_sequence.

CREATE TABLE events_new (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    payload      BLOB NOT NULL,
    created_at   BIGINT NOT NULL
);
INSERT INTO events_new (seq, workspace_id, kind, profile, scope, room_id, message_id, payload, created_at)
SELECT seq, workspace_id, kind, profile, scope, room_id, message_id, payload, created_at FROM events;
DELETE FROM sqlite_sequence WHERE name = 'events_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_new', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_workspace_seq ON events (workspace_id, seq);
CREATE INDEX events_created_at ON events (created_at);

CREATE TABLE turn_output_new (
    workspace_id TEXT NOT NULL,
    turn_id      TEXT NOT NULL,
    batch        BIGINT NOT NULL,
    updates      BLOB NOT NULL,
    text_bytes   BIGINT NOT NULL,
    stored_bytes BIGINT NOT NULL,
    truncated    BOOLEAN NOT NULL,
    at           BIGINT NOT NULL,
    PRIMARY KEY (turn_id, batch)
);
INSERT INTO turn_output_new (workspace_id, turn_id, batch, updates, text_bytes, stored_bytes, truncated, at)
SELECT workspace_id, turn_id, batch, updates, text_bytes, stored_bytes, truncated, at FROM turn_output;
DROP TABLE turn_output;
ALTER TABLE turn_output_new RENAME TO turn_output;

CREATE TABLE session_messages_new (
    id                TEXT PRIMARY KEY,
    workspace_id      TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    seq               BIGINT NOT NULL,
    requested         TEXT NOT NULL,
    routing           TEXT NOT NULL,
    text              BLOB NOT NULL,
    source_message_id TEXT NOT NULL,
    turn_id           TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    consumed_at       BIGINT,
    UNIQUE (session_id, seq)
);
INSERT INTO session_messages_new (id, workspace_id, session_id, seq, requested, routing, text, source_message_id, turn_id, created_at, consumed_at)
SELECT id, workspace_id, session_id, seq, requested, routing, text, source_message_id, turn_id, created_at, consumed_at FROM session_messages;
DROP TABLE session_messages;
ALTER TABLE session_messages_new RENAME TO session_messages;

-- SQLite-only: RENAME and DROP COLUMN (PostgreSQL: ALTER COLUMN … TYPE).
ALTER TABLE turns RENAME COLUMN detail TO detail_text;
ALTER TABLE turns ADD COLUMN detail BLOB NOT NULL DEFAULT '';
UPDATE turns SET detail = detail_text;
ALTER TABLE turns DROP COLUMN detail_text;

ALTER TABLE turn_journal RENAME COLUMN detail TO detail_text;
ALTER TABLE turn_journal ADD COLUMN detail BLOB NOT NULL DEFAULT '';
UPDATE turn_journal SET detail = detail_text;
ALTER TABLE turn_journal DROP COLUMN detail_text;
