-- 0007_spool_keys: the spool without a unique index, and its lane index
-- over a compact key. The unique index on (workspace_id, profile, scope,
-- message_id) held about 90 bytes of text per entry, and message ids are
-- random: each entry of a group commit landed in its own page of it, and
-- those pages were most of what a commit wrote to the WAL. Whether a
-- message is already spooled is now decided from the store's in-memory set
-- of spooled messages, checked against the table (spoolSet in spool.go);
-- the store is the only writer of its table. The lane index on
-- (workspace_id, profile, scope, room_id, seq) was as wide and split
-- often; lane_key is a 64-bit hash of the same four columns (spoolKey in
-- spool.go, registered with SQLite as jam_spool_key), and every lookup
-- through it also compares the text columns, so a collision is harmless.
--
-- SQLite-only: a constraint cannot be dropped in place, so the table is
-- rebuilt in this migration's transaction, and AUTOINCREMENT's high-water
-- mark (the sqlite_sequence row) is carried over so that no sequence is
-- ever handed out twice (see 0002). lane_key is nullable only so rows
-- written without it (tests writing SQL by hand) stay legal; every row
-- SpoolAppend writes has it. PostgreSQL adds the column and index and
-- drops the unique constraint in place.
CREATE TABLE spool_keyed (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    sealed       BLOB NOT NULL,
    received_at  BIGINT NOT NULL,
    lane_key     BIGINT
);

INSERT INTO spool_keyed (seq, workspace_id, profile, scope, room_id, message_id, sealed, received_at, lane_key)
SELECT seq, workspace_id, profile, scope, room_id, message_id, sealed, received_at,
       jam_spool_key(workspace_id, profile, scope, room_id)
FROM spool ORDER BY seq;

DELETE FROM sqlite_sequence WHERE name = 'spool_keyed';
INSERT INTO sqlite_sequence (name, seq) SELECT 'spool_keyed', seq FROM sqlite_sequence WHERE name = 'spool';

DROP TABLE spool;
ALTER TABLE spool_keyed RENAME TO spool;

-- One ordered lane per (peer, room): the index holds the rowid, which is
-- seq, so equal lane keys come out in seq order.
CREATE INDEX spool_lane ON spool (lane_key);
