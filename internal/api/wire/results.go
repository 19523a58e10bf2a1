package wire

import "time"

// Checkpoint is a snapshot of a session's worktree: a git commit on a
// private ref of the git directory that holds it. It records files only.
type Checkpoint struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	// Seq numbers the session's checkpoints from 1.
	Seq  int    `json:"seq"`
	Turn string `json:"turn,omitempty"`
	// Phase is turn_start, turn_end or request.
	Phase      string    `json:"phase"`
	Ref        string    `json:"ref"`
	Commit     string    `json:"commit"`
	BaseCommit string    `json:"base_commit,omitempty"`
	Created    time.Time `json:"created_at"`
}

// Checkpoints is the body of GET /v1/sessions/{session}/checkpoints.
type Checkpoints struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// ChangeSetFile is one entry of a change set's manifest.
type ChangeSetFile struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	// Kind is added, modified, deleted or renamed.
	Kind string `json:"kind"`
	// OldMode and NewMode are git's octal file modes ("100644",
	// "100755", "120000" for a symlink); absent where the side is.
	OldMode   string `json:"old_mode,omitempty"`
	NewMode   string `json:"new_mode,omitempty"`
	OldSHA256 string `json:"old_sha256,omitempty"`
	NewSHA256 string `json:"new_sha256,omitempty"`
	Size      int64  `json:"size"`
	Binary    bool   `json:"binary,omitempty"`
	Symlink   bool   `json:"symlink,omitempty"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
}

// ChangeSet is an immutable captured subject: what changed in a session's
// worktree between two checkpoints.
type ChangeSet struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Turn    string `json:"turn,omitempty"`
	// Origin is turn (after a succeeded turn), salvage (after a failed,
	// cancelled or interrupted one) or request.
	Origin         string `json:"origin"`
	BaseCheckpoint string `json:"base_checkpoint"`
	EndCheckpoint  string `json:"end_checkpoint"`
	BaseCommit     string `json:"base_commit"`
	EndCommit      string `json:"end_commit"`
	// Files is the manifest; empty when the change set records that
	// nothing changed.
	Files     []ChangeSetFile `json:"files"`
	Additions int             `json:"additions"`
	Deletions int             `json:"deletions"`
	// PatchBytes is the binary patch's size; PatchOmitted says it was over
	// the bound and is not kept (the checkpoints' commits reproduce it).
	PatchBytes    int64     `json:"patch_bytes"`
	PatchOmitted  bool      `json:"patch_omitted,omitempty"`
	SubjectDigest string    `json:"subject_digest"`
	Created       time.Time `json:"created_at"`
}

// ChangeSets is the body of GET /v1/changesets and GET
// /v1/sessions/{session}/changesets, newest first.
type ChangeSets struct {
	ChangeSets []ChangeSet `json:"changesets"`
}

// ChangeSetCaptureRequest is the body of POST
// /v1/sessions/{session}/changesets, which captures a change set of the
// session's worktree now (origin request).
type ChangeSetCaptureRequest struct {
	// Since is the Seq of the checkpoint the change set starts from; 0
	// (or absent) means the session's first checkpoint.
	Since int `json:"since,omitempty"`
}

// ChangeSetQuery selects change sets: the workspace's, one session's or
// one turn's, at most Limit (0: the daemon's default).
type ChangeSetQuery struct {
	Session string
	Turn    string
	Limit   int
}

// MaxChangeSetLimit bounds one page of change sets; DefaultChangeSetLimit
// is a page when the request names none.
const (
	MaxChangeSetLimit     = 500
	DefaultChangeSetLimit = 100
)
