-- 0025_delegations (PostgreSQL): delegations and their results. A
-- delegation's intent (parent, role, agent, instructions, inputs,
-- contract) is fixed at creation; child_session is '' until the child is
-- started, and a session is the child of at most one delegation (the
-- partial unique index). Its outcome moves by conditional updates, each
-- incrementing generation. instructions and contract are sealed whenever
-- the store has a Sealer (bound to workspace and delegation); inputs is
-- a JSON object of ids. A result is the one answer of its delegation (the
-- primary key refuses a second), sealed likewise, with the SHA-256 of its
-- plaintext; a trigger refuses every UPDATE and DELETE. Times are UTC
-- microseconds.

CREATE TABLE delegations (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id),
    parent_session TEXT NOT NULL,
    child_session  TEXT NOT NULL,
    role           TEXT NOT NULL CHECK (role IN ('developer', 'review', 'test', 'research', 'security', 'integration', 'coordinator')),
    agent          TEXT NOT NULL,
    instructions   BYTEA NOT NULL,
    inputs         TEXT NOT NULL,
    contract       BYTEA NOT NULL,
    contract_name  TEXT NOT NULL CHECK (contract_name IN ('review', 'test', 'custom')),
    state          TEXT NOT NULL CHECK (state IN ('pending', 'running', 'submitted', 'failed', 'cancelled')),
    reason         TEXT NOT NULL,
    error          TEXT NOT NULL,
    attempts       BIGINT NOT NULL CHECK (attempts >= 0),
    max_attempts   BIGINT NOT NULL CHECK (max_attempts >= 1),
    generation     BIGINT NOT NULL CHECK (generation >= 1),
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    CHECK (attempts <= max_attempts)
);

CREATE INDEX delegations_by_workspace ON delegations (workspace_id, created_at, id);
CREATE INDEX delegations_by_parent ON delegations (workspace_id, parent_session, created_at, id);
CREATE UNIQUE INDEX delegations_by_child ON delegations (workspace_id, child_session) WHERE child_session <> '';

CREATE TABLE delegation_results (
    delegation_id TEXT PRIMARY KEY REFERENCES delegations (id),
    workspace_id  TEXT NOT NULL,
    result        BYTEA NOT NULL,
    digest        TEXT NOT NULL,
    at            BIGINT NOT NULL
);

CREATE TRIGGER delegation_results_immutable BEFORE UPDATE OR DELETE ON delegation_results
    FOR EACH ROW EXECUTE FUNCTION jam_refuse_update();
