-- 0007_spool_keys (PostgreSQL): the spool's lane index over a compact key,
-- lane_key, a 64-bit hash of (workspace_id, profile, scope, room_id)
-- computed by the store (the same function as the SQLite dialect's, so a
-- row copied between dialects keeps its key); every lookup through it
-- also compares the text columns, so a collision is harmless.
--
-- Differs from the SQLite dialect's 0007 on purpose: the unique
-- constraint on (workspace_id, profile, scope, message_id) stays. SQLite
-- dropped it for an in-memory set of spooled messages, which works for a
-- store that is the only writer of its file; several daemons share a
-- PostgreSQL database, so a duplicate message is refused by the
-- constraint (INSERT … ON CONFLICT DO NOTHING with a read-back).
ALTER TABLE spool ADD COLUMN lane_key BIGINT;
DROP INDEX spool_lane;
CREATE INDEX spool_lane ON spool (lane_key, seq);
