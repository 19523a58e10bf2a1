-- 0006_runtime (PostgreSQL): owned runtimes. A runtime template is the durable desired
-- configuration of one agent identity (a peer); a session is one room's
-- conversation with it, materialized from the template; turns are the
-- session's ordered work, each transition recorded in turn_journal in the
-- same transaction that updates the turn; a lease is one agent process,
-- fenced by a generation; a worktree is a session's git working tree.
--
-- The same schema as the SQLite dialect's 0006; turn_journal.seq is an
-- identity column where SQLite uses AUTOINCREMENT.

-- desired/effective hold the configuration as JSON. A change bumps
-- desired_generation and names what changed in pending_change; when a
-- lease starts with the desired configuration, effective catches up and
-- pending_change empties. One comparison (desired_generation <>
-- effective_generation) says whether a change is outstanding.
CREATE TABLE runtime_templates (
    id                   TEXT PRIMARY KEY,
    workspace_id         TEXT NOT NULL,
    profile              TEXT NOT NULL,
    scope                TEXT NOT NULL,
    desired              TEXT NOT NULL,
    desired_generation   BIGINT NOT NULL,
    effective            TEXT NOT NULL,
    effective_generation BIGINT NOT NULL,
    pending_change       TEXT NOT NULL,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    UNIQUE (workspace_id, profile, scope)
);

-- provider_thread is the agent's own session id (ACP sessionId), kept to
-- resume the conversation in a new process.
CREATE TABLE runtime_sessions (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL,
    template_id     TEXT NOT NULL,
    profile         TEXT NOT NULL,
    scope           TEXT NOT NULL,
    room_id         TEXT NOT NULL,
    lifecycle       TEXT NOT NULL,
    provider_thread TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

-- One open session per (peer, room); archived and closed ones stay.
CREATE UNIQUE INDEX runtime_sessions_open ON runtime_sessions (workspace_id, profile, scope, room_id)
    WHERE lifecycle = 'open';

-- seq orders a session's turns. lease_id and lease_generation name the
-- lease an active turn runs on; its writes are fenced by them.
CREATE TABLE turns (
    id                TEXT PRIMARY KEY,
    workspace_id      TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    seq               BIGINT NOT NULL,
    routing           TEXT NOT NULL,
    source_message_id TEXT NOT NULL,
    state             TEXT NOT NULL,
    reason            TEXT NOT NULL,
    lease_id          TEXT NOT NULL,
    lease_generation  BIGINT NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    UNIQUE (session_id, seq)
);

-- At most one active turn per session.
CREATE UNIQUE INDEX turns_one_active ON turns (session_id)
    WHERE state IN ('preparing', 'running', 'cancelling');

-- An identity column, as in the spool (never reuse a sequence).
CREATE TABLE turn_journal (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id     TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    turn_id          TEXT NOT NULL,
    from_state       TEXT NOT NULL,
    to_state         TEXT NOT NULL,
    reason           TEXT NOT NULL,
    lease_generation BIGINT NOT NULL,
    at               BIGINT NOT NULL
);

CREATE INDEX turn_journal_turn ON turn_journal (turn_id, seq);

-- holder is the template (shared placement) or the session (dedicated)
-- the lease serves. Generations rise per holder; at most one lease of a
-- holder is live.
CREATE TABLE leases (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    holder       TEXT NOT NULL,
    generation   BIGINT NOT NULL,
    state        TEXT NOT NULL,
    reason       TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    started_at   BIGINT NOT NULL,
    ended_at     BIGINT,
    UNIQUE (workspace_id, holder, generation)
);

CREATE UNIQUE INDEX leases_one_live ON leases (workspace_id, holder) WHERE state = 'live';

-- A session's working tree, owned by id: path is only where it is now.
CREATE TABLE worktrees (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    session_id   TEXT NOT NULL UNIQUE,
    repo         TEXT NOT NULL,
    path         TEXT NOT NULL,
    branch       TEXT NOT NULL,
    state        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
