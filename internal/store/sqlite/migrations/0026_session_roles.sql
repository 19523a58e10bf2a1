-- 0026_session_roles: a session's role, what it does in a piece of work
-- (a delegation's child runs in the delegation's role): one of the roles
-- a delegation names, fixed when the session is created. Sessions made
-- before are developers.
--
-- Same text in the PostgreSQL dialect.
ALTER TABLE runtime_sessions ADD COLUMN role TEXT NOT NULL DEFAULT 'developer'
    CHECK (role IN ('developer', 'review', 'test', 'research', 'security', 'integration', 'coordinator'));
