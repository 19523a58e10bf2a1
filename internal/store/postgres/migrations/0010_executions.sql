-- 0010_executions (PostgreSQL, the SQLite dialect's text): one row per attempt of a turn on a lease. An execution
-- is operational evidence, not another unit of work: it is inserted in the
-- transaction that moves its turn from queued to preparing (which binds
-- the turn to the lease), and ended in the transaction that moves the turn
-- to a terminal state, with that state as its outcome and the turn's
-- reason. pid is the lease's process when the attempt started. Turns
-- recorded before this migration have no executions.
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number: TEXT ids, BIGINT times in UTC microseconds, standard constraints.

CREATE TABLE executions (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    turn_id          TEXT NOT NULL,
    lease_id         TEXT NOT NULL,
    lease_generation BIGINT NOT NULL,
    pid              BIGINT NOT NULL,
    state            TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    reason           TEXT NOT NULL,
    started_at       BIGINT NOT NULL,
    ended_at         BIGINT
);

CREATE INDEX executions_turn ON executions (turn_id, started_at);

-- At most one running execution per turn.
CREATE UNIQUE INDEX executions_one_running ON executions (turn_id) WHERE state = 'running';
