-- 0017_spool_unique (PostgreSQL): nothing to change. The SQLite dialect's
-- 0017 adds a unique index so that the database, not a store's memory,
-- refuses a second copy of a spooled message. This dialect never dropped
-- the spool's UNIQUE (workspace_id, profile, scope, message_id) (see 0007):
-- SpoolAppend's INSERT ... ON CONFLICT DO NOTHING waits for a concurrent
-- insert of the same key to commit or roll back, which keeps the check
-- race-free under READ COMMITTED. The number is kept so both dialects
-- describe one schema version.
SELECT 1;
