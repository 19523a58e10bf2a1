package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The results half of the work model, as in the SQLite dialect: rows are
// written once, migration 0019's triggers refuse an UPDATE of either
// table, and a session's (and a change set's checkpoints') existence in
// the workspace is a predicate of the INSERT. Each insert is one
// statement: READ COMMITTED is enough, since a seq or id taken at once by
// another handle is refused by the unique constraint.
const (
	checkpointColumns = `id, workspace_id, session_id, seq, turn_id, phase, git_dir, ref, commit_id, tree_id, base_commit, created_at`
	checkpointInsert  = `INSERT INTO checkpoints (` + checkpointColumns + `)
SELECT $1, $2, $3, $4::bigint, $5, $6, $7, $8, $9, $10, $11, $12::bigint
WHERE EXISTS (SELECT 1 FROM runtime_sessions WHERE workspace_id = $2 AND id = $3)`
	checkpointByID     = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = $1 AND id = $2`
	checkpointsOf      = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = $1 AND session_id = $2 ORDER BY seq`
	checkpointLatestOf = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = $1 AND session_id = $2 ORDER BY seq DESC LIMIT 1`

	changeSetHead    = `id, workspace_id, session_id, turn_id, origin, base_checkpoint, end_checkpoint, base_commit, end_commit, manifest, patch_bytes, patch_omitted, subject_digest, additions, deletions, created_at`
	changeSetColumns = changeSetHead + `, patch`
	changeSetInsert  = `INSERT INTO change_sets (` + changeSetColumns + `)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::bigint, $12::integer, $13, $14::bigint, $15::bigint, $16::bigint, $17::bytea
WHERE EXISTS (SELECT 1 FROM runtime_sessions WHERE workspace_id = $2 AND id = $3)
  AND EXISTS (SELECT 1 FROM checkpoints WHERE workspace_id = $2 AND session_id = $3 AND id = $6)
  AND EXISTS (SELECT 1 FROM checkpoints WHERE workspace_id = $2 AND session_id = $3 AND id = $7)`
	changeSetSelect = `SELECT id, workspace_id, session_id, turn_id, origin, base_checkpoint, end_checkpoint, base_commit, end_commit, manifest,
patch_bytes, patch_omitted <> 0, subject_digest, additions, deletions, created_at`
	changeSetByID = changeSetSelect + `, patch FROM change_sets WHERE workspace_id = $1 AND id = $2`
	// The lists leave the patch out (NULL in its place).
	changeSetList = changeSetSelect + `, NULL::bytea FROM change_sets WHERE workspace_id = $1
  AND ($2 = '' OR session_id = $2) AND ($3 = '' OR turn_id = $3) ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4`
)

// CheckpointInsert implements [store.Checkpoints].
func (s *Store) CheckpointInsert(ctx context.Context, c store.Checkpoint) (store.Checkpoint, error) {
	if err := c.Validate(); err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	n, err := rowsAffected(ctx, s.pool, checkpointInsert, c.ID, c.WorkspaceID, c.SessionID, c.Seq, c.Turn, c.Phase, c.GitDir, c.Ref,
		c.Commit, c.Tree, c.BaseCommit, micros(c.CreatedAt))
	if err != nil {
		if pgCode(err) == codeUniqueViolation {
			return store.Checkpoint{}, fmt.Errorf("checkpoint %s (%d of %s): %w", c.ID, c.Seq, c.SessionID, jam.ErrAlreadyExists)
		}
		return store.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", c.ID, mapErr(err))
	}
	if n == 0 {
		return store.Checkpoint{}, fmt.Errorf("checkpoint %s: %w: no session %s", c.ID, jam.ErrNotFound, c.SessionID)
	}
	return s.CheckpointGet(ctx, c.WorkspaceID, c.ID)
}

// CheckpointGet implements [store.Checkpoints].
func (s *Store) CheckpointGet(ctx context.Context, ws jam.WorkspaceID, id jam.SnapshotID) (store.Checkpoint, error) {
	c, err := scanCheckpoint(s.pool.QueryRow(ctx, checkpointByID, ws, id))
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", id, notFoundAs(err, "no such checkpoint"))
	}
	return c, nil
}

// CheckpointList implements [store.Checkpoints].
func (s *Store) CheckpointList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.Checkpoint, error) {
	out, err := queryAll(ctx, s.pool, scanCheckpoint, checkpointsOf, ws, session)
	if err != nil {
		return nil, fmt.Errorf("checkpoints of %s: %w", session, mapErr(err))
	}
	return out, nil
}

// CheckpointLatest implements [store.Checkpoints].
func (s *Store) CheckpointLatest(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (store.Checkpoint, error) {
	c, err := scanCheckpoint(s.pool.QueryRow(ctx, checkpointLatestOf, ws, session))
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("latest checkpoint of %s: %w", session, notFoundAs(err, "no checkpoint"))
	}
	return c, nil
}

func scanCheckpoint(row scanner) (store.Checkpoint, error) {
	var c store.Checkpoint
	var created int64
	err := row.Scan(&c.ID, &c.WorkspaceID, &c.SessionID, &c.Seq, &c.Turn, &c.Phase, &c.GitDir, &c.Ref, &c.Commit, &c.Tree, &c.BaseCommit, &created)
	c.CreatedAt = fromMicros(created)
	return c, err
}

// ChangeSetInsert implements [store.ChangeSets].
func (s *Store) ChangeSetInsert(ctx context.Context, c store.ChangeSet) (store.ChangeSet, error) {
	if err := c.Validate(); err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set: %w", err)
	}
	manifest, err := store.EncodeManifest(c.Files)
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set %s: %w", c.ID, err)
	}
	omitted := 0
	if c.PatchOmitted {
		omitted = 1
	}
	n, err := rowsAffected(ctx, s.pool, changeSetInsert, c.ID, c.WorkspaceID, c.SessionID, c.Turn, c.Origin, c.BaseCheckpoint, c.EndCheckpoint,
		c.BaseCommit, c.EndCommit, s.seal(string(manifest), manifestAAD(c.WorkspaceID, c.ID)), c.PatchBytes, omitted, c.SubjectDigest, c.Additions, c.Deletions, micros(c.CreatedAt),
		s.sealPatch(c.Patch, patchAAD(c.WorkspaceID, c.ID)))
	if err != nil {
		if pgCode(err) == codeUniqueViolation {
			return store.ChangeSet{}, fmt.Errorf("change set %s: %w", c.ID, jam.ErrAlreadyExists)
		}
		return store.ChangeSet{}, fmt.Errorf("change set %s: %w", c.ID, mapErr(err))
	}
	if n == 0 {
		return store.ChangeSet{}, fmt.Errorf("change set %s: %w: no session %s with checkpoints %s and %s", c.ID, jam.ErrNotFound, c.SessionID, c.BaseCheckpoint, c.EndCheckpoint)
	}
	return s.ChangeSetGet(ctx, c.WorkspaceID, c.ID)
}

// ChangeSetGet implements [store.ChangeSets].
func (s *Store) ChangeSetGet(ctx context.Context, ws jam.WorkspaceID, id jam.ChangeSetID) (store.ChangeSet, error) {
	c, err := s.scanChangeSet(s.pool.QueryRow(ctx, changeSetByID, ws, id))
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set %s: %w", id, notFoundAs(err, "no such change set"))
	}
	return c, nil
}

// ChangeSetList implements [store.ChangeSets].
func (s *Store) ChangeSetList(ctx context.Context, p store.ChangeSetListParams) ([]store.ChangeSet, error) {
	limit, err := p.Bound()
	if err != nil {
		return nil, fmt.Errorf("change sets: %w", err)
	}
	out, err := queryAll(ctx, s.pool, s.scanChangeSet, changeSetList, p.WorkspaceID, p.SessionID, p.Turn, limit)
	if err != nil {
		return nil, fmt.Errorf("change sets: %w", mapErr(err))
	}
	return out, nil
}

func (s *Store) scanChangeSet(row scanner) (store.ChangeSet, error) {
	var c store.ChangeSet
	var sealedManifest, patch []byte
	var created int64
	err := row.Scan(&c.ID, &c.WorkspaceID, &c.SessionID, &c.Turn, &c.Origin, &c.BaseCheckpoint, &c.EndCheckpoint, &c.BaseCommit, &c.EndCommit,
		&sealedManifest, &c.PatchBytes, &c.PatchOmitted, &c.SubjectDigest, &c.Additions, &c.Deletions, &created, &patch)
	if err != nil {
		return store.ChangeSet{}, err
	}
	c.CreatedAt = fromMicros(created)
	manifest, err := s.open(sealedManifest, manifestAAD(c.WorkspaceID, c.ID))
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set %s: manifest: %w", c.ID, err)
	}
	if c.Patch, err = s.openPatch(patch, patchAAD(c.WorkspaceID, c.ID)); err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set %s: patch: %w", c.ID, err)
	}
	if c.Files, err = store.DecodeManifest([]byte(manifest)); err != nil {
		return store.ChangeSet{}, errors.Join(fmt.Errorf("change set %s", c.ID), err)
	}
	if len(c.Files) == 0 {
		c.Files = nil
	}
	return c, nil
}
