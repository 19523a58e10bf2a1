package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The results half of the work model. Rows are written once: no statement
// here updates one, and migration 0019's triggers refuse an UPDATE of
// either table from anywhere. A session's existence (and, for a change
// set, its two checkpoints') is a predicate of the INSERT, so a row never
// names a session of another workspace.
const (
	checkpointColumns = `id, workspace_id, session_id, seq, turn_id, phase, git_dir, ref, commit_id, tree_id, base_commit, created_at`
	checkpointInsert  = `INSERT INTO checkpoints (` + checkpointColumns + `)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM runtime_sessions WHERE workspace_id = ? AND id = ?)`
	checkpointByID     = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = ? AND id = ?`
	checkpointOfSeq    = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = ? AND session_id = ? AND seq = ?`
	checkpointsOf      = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = ? AND session_id = ? ORDER BY seq`
	checkpointLatestOf = `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE workspace_id = ? AND session_id = ? ORDER BY seq DESC LIMIT 1`

	changeSetHead    = `id, workspace_id, session_id, turn_id, origin, base_checkpoint, end_checkpoint, base_commit, end_commit, manifest, patch_bytes, patch_omitted, subject_digest, additions, deletions, created_at`
	changeSetColumns = changeSetHead + `, patch`
	changeSetInsert  = `INSERT INTO change_sets (` + changeSetColumns + `)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM runtime_sessions WHERE workspace_id = ? AND id = ?)
  AND EXISTS (SELECT 1 FROM checkpoints WHERE workspace_id = ? AND session_id = ? AND id = ?)
  AND EXISTS (SELECT 1 FROM checkpoints WHERE workspace_id = ? AND session_id = ? AND id = ?)`
	changeSetByID = `SELECT ` + changeSetColumns + ` FROM change_sets WHERE workspace_id = ? AND id = ?`
	// The lists leave the patch out (NULL in its place).
	changeSetList = `SELECT ` + changeSetHead + `, NULL FROM change_sets WHERE workspace_id = ?
  AND (? = '' OR session_id = ?) AND (? = '' OR turn_id = ?) ORDER BY created_at DESC, id DESC LIMIT ?`
)

// CheckpointInsert implements [store.Checkpoints].
func (s *Store) CheckpointInsert(ctx context.Context, c store.Checkpoint) (store.Checkpoint, error) {
	if err := c.Validate(); err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, checkpointInsert, c.ID, c.WorkspaceID, c.SessionID, c.Seq, c.Turn, c.Phase, c.GitDir, c.Ref,
		c.Commit, c.Tree, c.BaseCommit, c.CreatedAt.UnixMicro(), c.WorkspaceID, c.SessionID)
	if err != nil {
		if isUniqueViolation(err) {
			return store.Checkpoint{}, fmt.Errorf("checkpoint %s (%d of %s): %w", c.ID, c.Seq, c.SessionID, jam.ErrAlreadyExists)
		}
		return store.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	if err := oneRow(res, "no session "+string(c.SessionID)); err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", c.ID, err)
	}
	return s.CheckpointGet(ctx, c.WorkspaceID, c.ID)
}

// CheckpointGet implements [store.Checkpoints].
func (s *Store) CheckpointGet(ctx context.Context, ws jam.WorkspaceID, id jam.SnapshotID) (store.Checkpoint, error) {
	c, err := scanCheckpoint(s.reader.QueryRowContext(ctx, checkpointByID, ws, id))
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", id, notFoundAs(err, "no such checkpoint"))
	}
	return c, nil
}

// CheckpointList implements [store.Checkpoints].
func (s *Store) CheckpointList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.Checkpoint, error) {
	out, err := queryAll(ctx, s.reader, scanCheckpoint, checkpointsOf, ws, session)
	if err != nil {
		return nil, fmt.Errorf("checkpoints of %s: %w", session, err)
	}
	return out, nil
}

// CheckpointLatest implements [store.Checkpoints].
func (s *Store) CheckpointLatest(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (store.Checkpoint, error) {
	c, err := scanCheckpoint(s.reader.QueryRowContext(ctx, checkpointLatestOf, ws, session))
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
	res, err := s.writer.ExecContext(ctx, changeSetInsert, c.ID, c.WorkspaceID, c.SessionID, c.Turn, c.Origin, c.BaseCheckpoint, c.EndCheckpoint,
		c.BaseCommit, c.EndCommit, s.seal(string(manifest), manifestAAD(c.WorkspaceID, c.ID)), c.PatchBytes, c.PatchOmitted, c.SubjectDigest, c.Additions, c.Deletions, c.CreatedAt.UnixMicro(),
		s.sealPatch(c.Patch, patchAAD(c.WorkspaceID, c.ID)),
		c.WorkspaceID, c.SessionID, c.WorkspaceID, c.SessionID, c.BaseCheckpoint, c.WorkspaceID, c.SessionID, c.EndCheckpoint)
	if err != nil {
		if isUniqueViolation(err) {
			return store.ChangeSet{}, fmt.Errorf("change set %s: %w", c.ID, jam.ErrAlreadyExists)
		}
		return store.ChangeSet{}, fmt.Errorf("change set %s: %w", c.ID, err)
	}
	if err := oneRow(res, "no session "+string(c.SessionID)+" with checkpoints "+string(c.BaseCheckpoint)+" and "+string(c.EndCheckpoint)); err != nil {
		return store.ChangeSet{}, fmt.Errorf("change set %s: %w", c.ID, err)
	}
	return s.ChangeSetGet(ctx, c.WorkspaceID, c.ID)
}

// ChangeSetGet implements [store.ChangeSets].
func (s *Store) ChangeSetGet(ctx context.Context, ws jam.WorkspaceID, id jam.ChangeSetID) (store.ChangeSet, error) {
	c, err := s.scanChangeSet(s.reader.QueryRowContext(ctx, changeSetByID, ws, id))
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
	out, err := queryAll(ctx, s.reader, s.scanChangeSet, changeSetList, p.WorkspaceID, p.SessionID, p.SessionID, p.Turn, p.Turn, limit)
	if err != nil {
		return nil, fmt.Errorf("change sets: %w", err)
	}
	return out, nil
}

func (s *Store) scanChangeSet(row scanner) (store.ChangeSet, error) {
	var c store.ChangeSet
	var manifestV any
	var patch []byte
	var created int64
	err := row.Scan(&c.ID, &c.WorkspaceID, &c.SessionID, &c.Turn, &c.Origin, &c.BaseCheckpoint, &c.EndCheckpoint, &c.BaseCommit, &c.EndCommit,
		&manifestV, &c.PatchBytes, &c.PatchOmitted, &c.SubjectDigest, &c.Additions, &c.Deletions, &created, &patch)
	if err != nil {
		return store.ChangeSet{}, err
	}
	c.CreatedAt = fromMicros(created)
	manifest, err := s.open(manifestV, manifestAAD(c.WorkspaceID, c.ID))
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
