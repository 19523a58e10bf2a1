-- 0019_results: checkpoints of sessions' worktrees and the change sets
-- captured between two of them. Both are written once and never changed:
-- a trigger refuses every UPDATE of either table. A session's checkpoints
-- are numbered by seq, unique per session. The manifest is a JSON array of
-- files; the patch is NULL when it was over the capture's bound (or the
-- change set is empty).

CREATE TABLE checkpoints (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    turn_id      TEXT NOT NULL,
    phase        TEXT NOT NULL,
    git_dir      TEXT NOT NULL,
    ref          TEXT NOT NULL,
    commit_id    TEXT NOT NULL,
    tree_id      TEXT NOT NULL,
    base_commit  TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, session_id, seq)
);

CREATE TABLE change_sets (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    turn_id         TEXT NOT NULL,
    origin          TEXT NOT NULL,
    base_checkpoint TEXT NOT NULL,
    end_checkpoint  TEXT NOT NULL,
    base_commit     TEXT NOT NULL,
    end_commit      TEXT NOT NULL,
    manifest        TEXT NOT NULL,
    patch           BLOB,
    patch_bytes     BIGINT NOT NULL,
    patch_omitted   INTEGER NOT NULL,
    subject_digest  TEXT NOT NULL,
    additions       BIGINT NOT NULL,
    deletions       BIGINT NOT NULL,
    created_at      BIGINT NOT NULL
);

CREATE INDEX change_sets_by_session ON change_sets (workspace_id, session_id, created_at, id);
CREATE INDEX change_sets_by_turn ON change_sets (workspace_id, turn_id, created_at, id);
CREATE INDEX change_sets_by_workspace ON change_sets (workspace_id, created_at, id);

CREATE TRIGGER checkpoints_immutable BEFORE UPDATE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'checkpoints are immutable');
END;

CREATE TRIGGER change_sets_immutable BEFORE UPDATE ON change_sets
BEGIN
    SELECT RAISE(ABORT, 'change sets are immutable');
END;
