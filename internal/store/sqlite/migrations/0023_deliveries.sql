-- 0023_deliveries: operations, their evidence, and deliveries. An
-- operation is the person-visible record of a long action; its jobs are a
-- JSON array of job ids (at most 32), its result JSON (NULL for none).
-- Evidence is append-only: its seq counts 1, 2, ... per operation, one
-- past the operation's highest in the insert, and the primary key
-- (operation_id, seq) refuses a second entry of one seq; triggers refuse
-- every UPDATE and DELETE. A delivery's intent (change set, remote,
-- branch, pull request) is unique per workspace, change set, remote and
-- branch (the conflict target of the create's ON CONFLICT DO NOTHING);
-- its outcome is rewritten by updates fenced by generation, which every
-- update increments. pr is 0 or 1. Times are UTC microseconds;
-- followed_at is NULL until the pull request is first followed.

CREATE TABLE operations (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    kind         TEXT NOT NULL,
    subject      TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    progress     TEXT NOT NULL,
    result       BLOB,
    error_code   TEXT NOT NULL,
    error        TEXT NOT NULL,
    jobs         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);

CREATE INDEX operations_by_workspace ON operations (workspace_id, created_at, id);
CREATE INDEX operations_by_subject ON operations (workspace_id, kind, subject);

CREATE TABLE operation_evidence (
    operation_id TEXT NOT NULL REFERENCES operations (id),
    workspace_id TEXT NOT NULL,
    seq          BIGINT NOT NULL CHECK (seq >= 1),
    step         TEXT NOT NULL,
    event        TEXT NOT NULL CHECK (event IN ('start', 'end', 'error', 'note')),
    detail       TEXT,
    at           BIGINT NOT NULL,
    PRIMARY KEY (operation_id, seq)
);

CREATE TRIGGER operation_evidence_no_update BEFORE UPDATE ON operation_evidence
BEGIN
    SELECT RAISE(ABORT, 'operation evidence is immutable');
END;

CREATE TRIGGER operation_evidence_no_delete BEFORE DELETE ON operation_evidence
BEGIN
    SELECT RAISE(ABORT, 'operation evidence is immutable');
END;

CREATE TABLE deliveries (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    change_set_id TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    turn          TEXT NOT NULL,
    remote        TEXT NOT NULL,
    branch        TEXT NOT NULL,
    connection_id TEXT NOT NULL,
    pr            INTEGER NOT NULL CHECK (pr IN (0, 1)),
    repo          TEXT NOT NULL,
    api_base_url  TEXT NOT NULL,
    base          TEXT NOT NULL,
    title         TEXT NOT NULL,
    operation     TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('pending', 'building', 'pushing', 'pushed', 'pr_open', 'merged', 'closed', 'failed')),
    commit_sha    TEXT NOT NULL,
    remote_sha    TEXT NOT NULL,
    pr_number     BIGINT NOT NULL CHECK (pr_number >= 0),
    pr_url        TEXT NOT NULL,
    pr_state      TEXT NOT NULL,
    pr_head_sha   TEXT NOT NULL,
    checks        TEXT NOT NULL,
    error_code    TEXT NOT NULL,
    error         TEXT NOT NULL,
    generation    BIGINT NOT NULL CHECK (generation >= 1),
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    followed_at   BIGINT,
    UNIQUE (workspace_id, change_set_id, remote, branch)
);

CREATE INDEX deliveries_by_workspace ON deliveries (workspace_id, created_at, id);
CREATE INDEX deliveries_by_state ON deliveries (workspace_id, state);
