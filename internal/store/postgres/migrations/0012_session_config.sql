-- 0012_session_config (PostgreSQL, the SQLite dialect's text): a session's own configuration. overrides holds, as
-- JSON, the runtime keys the session sets differently from its template
-- (a repository for its worktree, a command for its own process); '{}'
-- runs the template's configuration as is. Sessions made before keep '{}'.
--
-- Same text in the PostgreSQL dialect.
ALTER TABLE runtime_sessions ADD COLUMN overrides TEXT NOT NULL DEFAULT '{}';
