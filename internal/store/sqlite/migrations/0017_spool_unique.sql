-- 0017_spool_unique: one spool row per message and lane, enforced by the
-- database. Until now a store decided whether a message was spooled from
-- its in-memory set of spooled messages, which only held while one store
-- wrote the file; two handles on one database (two processes, or a store
-- reopened while the old one drains) could both append a message. The
-- batch insert is INSERT OR IGNORE, so with this index a second copy is
-- skipped by the database, and SpoolAppend's read-back reports it as not
-- appended. The set stays, as a cache of what is certainly spooled.
--
-- The key is (lane_key, message_id), not the peer's text columns: entries
-- are shorter and sort by lane first. Within a lane message ids are still
-- random, so in a spool of many thousand rows each entry of a group commit
-- still dirties a page of its own; a spool the engine drains holds few
-- rows, and the index a few pages. A message belongs to one room,
-- so one lane: keying by lane is keying by peer. lane_key is a hash, and
-- two lanes whose keys collide and that receive the same message id would
-- refuse the second copy; SpoolAppend's duplicate check compares the text
-- columns, so such a collision fails the append loudly instead of losing
-- the message. Rows without a lane_key (written by hand) are not covered.
--
-- Copies already duplicated (by two writers before this migration) are
-- removed first, keeping the oldest: moving a later copy to the queue
-- would find the message queued and drop it anyway.
--
-- PostgreSQL keeps the same index; its INSERT ... ON CONFLICT DO NOTHING
-- waits for a concurrent insert of the same key to commit or roll back,
-- which is what makes the check race-free under READ COMMITTED.
DELETE FROM spool
WHERE lane_key IS NOT NULL
  AND seq NOT IN (SELECT MIN(seq) FROM spool WHERE lane_key IS NOT NULL GROUP BY lane_key, message_id);

CREATE UNIQUE INDEX spool_lane_message ON spool (lane_key, message_id);
