-- 0021_jobs (PostgreSQL): durable jobs, the daemon's internal continuations. A job is
-- claimed under a lease fenced by its generation, which every claim
-- increments; every later write of the worker names the generation in its
-- WHERE clause. An idempotency key is unique per workspace and kind when
-- it is not '' (the partial index is the conflict target of the enqueue's
-- ON CONFLICT DO NOTHING). payload, result and error are sealed with the
-- daemon key (BYTEA; an empty value is stored empty). Times are UTC
-- microseconds; lease_until is NULL when the job is not running.

CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    kind            TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    payload         BYTEA NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'dead', 'cancelled')),
    attempt         BIGINT NOT NULL,
    max_attempts    BIGINT NOT NULL CHECK (max_attempts BETWEEN 1 AND 100),
    run_after       BIGINT NOT NULL,
    owner           TEXT NOT NULL,
    generation      BIGINT NOT NULL,
    lease_until     BIGINT,
    result          BYTEA NOT NULL,
    error           BYTEA NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE UNIQUE INDEX jobs_idempotency ON jobs (workspace_id, kind, idempotency_key) WHERE idempotency_key <> '';
CREATE INDEX jobs_by_state ON jobs (workspace_id, state, created_at, id);
CREATE INDEX jobs_by_workspace ON jobs (workspace_id, created_at, id);
