package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestCheckpointAndChangeSetValidate(t *testing.T) {
	m := jam.NewMinter(time.Now, nil)
	at := time.Unix(1700000000, 0)
	c40, d64 := strings.Repeat("a", 40), strings.Repeat("b", 64)
	cp := store.Checkpoint{ID: jam.New[jam.SnapshotID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), SessionID: jam.New[jam.SessionID](m),
		Seq: 1, Phase: store.CheckpointTurnStart, GitDir: "/g", Ref: "refs/jam/checkpoints/s/1", Commit: c40, Tree: c40, CreatedAt: at}
	cs := store.ChangeSet{ID: jam.New[jam.ChangeSetID](m), WorkspaceID: cp.WorkspaceID, SessionID: cp.SessionID, Origin: store.ChangeSetTurn,
		BaseCheckpoint: cp.ID, EndCheckpoint: cp.ID, BaseCommit: c40, EndCommit: d64,
		Files: []store.ChangeSetFile{{Path: "a", Kind: store.ChangeAdded, NewSHA256: d64}}, Patch: []byte("p"), PatchBytes: 1,
		SubjectDigest: "sha256:" + d64, CreatedAt: at}
	if err := cp.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := cs.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func() error{
		"seq0":       func() error { c := cp; c.Seq = 0; return c.Validate() },
		"phase":      func() error { c := cp; c.Phase = "x"; return c.Validate() },
		"ref":        func() error { c := cp; c.Ref = "refs/heads/x"; return c.Validate() },
		"commit":     func() error { c := cp; c.Commit = "abc"; return c.Validate() },
		"id":         func() error { c := cp; c.ID = "snap_x"; return c.Validate() },
		"origin":     func() error { c := cs; c.Origin = "x"; return c.Validate() },
		"omittedset": func() error { c := cs; c.PatchOmitted = true; return c.Validate() },
		"nopatch":    func() error { c := cs; c.Patch = nil; return c.Validate() },
		"bytes":      func() error { c := cs; c.PatchBytes = 0; return c.Validate() },
		"digest":     func() error { c := cs; c.SubjectDigest = d64; return c.Validate() },
		"emptypath":  func() error { c := cs; c.Files = []store.ChangeSetFile{{Kind: store.ChangeAdded}}; return c.Validate() },
		"kind":       func() error { c := cs; c.Files = []store.ChangeSetFile{{Path: "a", Kind: "x"}}; return c.Validate() },
		"toomany": func() error {
			c := cs
			c.Files = make([]store.ChangeSetFile, store.MaxChangeSetFiles+1)
			return c.Validate()
		},
	}
	for name, f := range bad {
		if err := f(); !errors.Is(err, jam.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}
