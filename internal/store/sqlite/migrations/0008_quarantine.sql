-- 0008_quarantine: spool entries and queue rows that can no longer be
-- read (a column of the wrong type or out of its domain, or sealed content
-- that no longer opens) are moved here, in the transaction that deletes
-- them from their table, so that the rest of their room keeps flowing and
-- nothing is silently lost. A record keeps what its row held: the identity
-- columns as text (even when they are not valid ids; workspace_id is ''
-- when the row's own was not a valid workspace id), the sealed content
-- byte for byte, and every column as a JSON object (row_json, blobs in
-- base64), with the reason it was taken out.
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number: TEXT ids, BIGINT times in UTC microseconds. SQLite-only: INTEGER
-- PRIMARY KEY AUTOINCREMENT (an identity column there); BLOB is bytea.
CREATE TABLE quarantine (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id   TEXT NOT NULL,
    source         TEXT NOT NULL CHECK (source IN ('spool', 'queue')),
    seq            BIGINT NOT NULL,
    profile        TEXT NOT NULL,
    scope          TEXT NOT NULL,
    room_id        TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    reason         TEXT NOT NULL,
    row_json       TEXT NOT NULL,
    sealed         BLOB NOT NULL,
    quarantined_at BIGINT NOT NULL
);

CREATE INDEX quarantine_workspace ON quarantine (workspace_id, id);
