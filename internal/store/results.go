package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// The results half of the work model: checkpoints of a session's worktree
// and the change sets captured between two of them. Both are immutable once
// written: no method of Checkpoints or ChangeSets changes a stored row, and
// each dialect refuses an UPDATE of either table in the database itself.

// CheckpointPhase says when a checkpoint was taken.
type CheckpointPhase string

// The phases of a checkpoint.
const (
	CheckpointTurnStart CheckpointPhase = "turn_start" // before a turn's prompt reaches the agent
	CheckpointTurnEnd   CheckpointPhase = "turn_end"   // after the turn's outcome, whatever it was
	CheckpointRequest   CheckpointPhase = "request"    // taken on request (a capture, an archive, a remove)
)

// Checkpoint is a snapshot of a session's worktree as a git commit on a
// private ref (refs/jam/checkpoints/<session>/<seq>) of the git directory
// that holds it: the session's repository, or a private git directory for
// a session without one. It records files only: never process, PTY or
// socket state.
type Checkpoint struct {
	ID          jam.SnapshotID
	WorkspaceID jam.WorkspaceID
	SessionID   jam.SessionID
	// Seq numbers a session's checkpoints from 1, in the order taken; the
	// caller assigns it (one past the session's latest) and a second
	// checkpoint with the same Seq is jam.ErrAlreadyExists.
	Seq   int
	Turn  jam.TurnID // "" for one taken on request outside a turn
	Phase CheckpointPhase
	// GitDir is the git directory that holds the commit; Ref is the
	// private ref naming it.
	GitDir string
	Ref    string
	// Commit is the checkpoint's commit, Tree its tree, and BaseCommit the
	// commit the worktree's HEAD pointed at when it was taken (the
	// checkpoint commit's parent; "" in a private git directory's first).
	Commit     string
	Tree       string
	BaseCommit string
	CreatedAt  time.Time
}

// ChangeKind is what happened to one path of a change set.
type ChangeKind string

// The kinds of change.
const (
	ChangeAdded    ChangeKind = "added"
	ChangeModified ChangeKind = "modified" // content, mode, or both
	ChangeDeleted  ChangeKind = "deleted"
	ChangeRenamed  ChangeKind = "renamed" // OldPath moved to Path, perhaps edited too
)

// ChangeSetFile is one entry of a change set's manifest.
type ChangeSetFile struct {
	Path    string
	OldPath string // the path before a rename; "" otherwise
	// OldMode and NewMode are git's file modes (0100644, 0100755,
	// 0120000 for a symlink); 0 where the side is absent.
	OldMode uint32
	NewMode uint32
	// OldSHA256 and NewSHA256 are the hex SHA-256 of the file's bytes (a
	// symlink's target) on each side; "" where the side is absent.
	OldSHA256 string
	NewSHA256 string
	// Size is the new side's size in bytes (the old side's for a delete).
	Size      int64
	Kind      ChangeKind
	Binary    bool
	Symlink   bool // either side is a symlink
	Additions int  // lines; 0 for a binary file
	Deletions int
}

// ChangeSetOrigin says why a change set was captured.
type ChangeSetOrigin string

// The origins of a change set.
const (
	ChangeSetTurn    ChangeSetOrigin = "turn"    // after a succeeded turn
	ChangeSetSalvage ChangeSetOrigin = "salvage" // after a failed, cancelled or interrupted turn
	ChangeSetRequest ChangeSetOrigin = "request" // captured on request
)

// ChangeSet is the immutable captured subject of a turn (or a request):
// what changed between two checkpoints of a session's worktree.
type ChangeSet struct {
	ID          jam.ChangeSetID
	WorkspaceID jam.WorkspaceID
	SessionID   jam.SessionID
	Turn        jam.TurnID // "" for one captured on request outside a turn
	Origin      ChangeSetOrigin
	// Base and End are the checkpoints it lies between.
	BaseCheckpoint jam.SnapshotID
	EndCheckpoint  jam.SnapshotID
	BaseCommit     string // the base checkpoint's commit
	EndCommit      string // the end checkpoint's commit
	Files          []ChangeSetFile
	// Patch is git diff --binary --full-index from the base commit's tree
	// to the end commit's; nil when PatchOmitted (it was over the bound,
	// and the checkpoints' commits reproduce it). PatchBytes is its size
	// either way.
	Patch        []byte
	PatchBytes   int64
	PatchOmitted bool
	// SubjectDigest is "sha256:" and the hex digest of the canonical
	// encoding of the manifest and the whole patch.
	SubjectDigest string
	Additions     int
	Deletions     int
	CreatedAt     time.Time
}

// Empty says whether the change set records that nothing changed.
func (c ChangeSet) Empty() bool { return len(c.Files) == 0 }

// Checkpoints stores checkpoints. There is no update and no delete of one
// checkpoint: a row is written once.
type Checkpoints interface {
	// CheckpointInsert records a checkpoint; its ID, or its session's Seq,
	// taken already is jam.ErrAlreadyExists, and a session that does not
	// exist is jam.ErrNotFound.
	CheckpointInsert(ctx context.Context, c Checkpoint) (Checkpoint, error)
	// CheckpointGet returns one checkpoint of the workspace.
	CheckpointGet(ctx context.Context, ws jam.WorkspaceID, id jam.SnapshotID) (Checkpoint, error)
	// CheckpointList returns a session's checkpoints, by Seq ascending.
	CheckpointList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]Checkpoint, error)
	// CheckpointLatest returns a session's checkpoint of highest Seq;
	// jam.ErrNotFound when it has none.
	CheckpointLatest(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (Checkpoint, error)
}

// ChangeSetListParams selects change sets: the workspace's, or one
// session's, or one turn's; newest first, at most Limit (0 means the
// store's default bound).
type ChangeSetListParams struct {
	WorkspaceID jam.WorkspaceID
	SessionID   jam.SessionID
	Turn        jam.TurnID
	Limit       int
}

// ChangeSets stores change sets. There is no method that changes a
// captured change set, and no dialect lets one be updated.
type ChangeSets interface {
	// ChangeSetInsert records a change set; its ID taken already is
	// jam.ErrAlreadyExists, and an unknown session or checkpoint is
	// jam.ErrNotFound.
	ChangeSetInsert(ctx context.Context, c ChangeSet) (ChangeSet, error)
	// ChangeSetGet returns one change set of the workspace, with its patch.
	ChangeSetGet(ctx context.Context, ws jam.WorkspaceID, id jam.ChangeSetID) (ChangeSet, error)
	// ChangeSetList returns change sets with their manifests but without
	// their patches (Patch nil, PatchBytes set).
	ChangeSetList(ctx context.Context, p ChangeSetListParams) ([]ChangeSet, error)
}

// DefaultChangeSetLimit and MaxChangeSetLimit bound one ChangeSetList.
const (
	DefaultChangeSetLimit = 100
	MaxChangeSetLimit     = 500
)

// Bound validates p and returns its limit (the default for 0).
func (p ChangeSetListParams) Bound() (int, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
		return 0, err
	}
	switch {
	case p.Limit == 0:
		return DefaultChangeSetLimit, nil
	case p.Limit < 0 || p.Limit > MaxChangeSetLimit:
		return 0, fmt.Errorf("%w: limit %d is outside 1 to %d", jam.ErrInvalid, p.Limit, MaxChangeSetLimit)
	}
	return p.Limit, nil
}
