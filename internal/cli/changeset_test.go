package cli_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var changeSetFixture = wire.ChangeSet{ID: "cs_1", Session: "sess_1", Turn: "turn_1", Origin: "turn", BaseCheckpoint: "snap_1", EndCheckpoint: "snap_2",
	BaseCommit: "1111111111111111111111111111111111111111", EndCommit: "2222222222222222222222222222222222222222",
	Files: []wire.ChangeSetFile{
		{Path: "main.go", Kind: "modified", OldMode: "100644", NewMode: "100644", OldSHA256: "aaaaaaaaaaaaaaaa", NewSHA256: "bbbbbbbbbbbbbbbb", Size: 120, Additions: 10, Deletions: 4},
		{Path: "run.sh", Kind: "modified", OldMode: "100644", NewMode: "100755", OldSHA256: "cccccccccccccccc", NewSHA256: "cccccccccccccccc", Size: 9},
		{Path: "logo.png", Kind: "added", NewMode: "100644", NewSHA256: "dddddddddddddddd", Size: 2048, Binary: true},
		{Path: "new name.txt", OldPath: "old.txt", Kind: "renamed", OldMode: "100644", NewMode: "100644", OldSHA256: "eeeeeeeeeeeeeeee", NewSHA256: "ffffffffffffffff", Size: 3, Additions: 2},
	},
	Additions: 12, Deletions: 4, PatchBytes: 4096, SubjectDigest: "sha256:0123", Created: created}

func TestChangeSetCommands(t *testing.T) {
	t.Parallel()
	at := created.Local().Format(time.DateTime)
	patch := "diff --git a/main.go b/main.go\nindex 1..2 100644\n--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-old\n+new\n context\n"
	results := apitest.Results{
		ChangeSetsFunc: func(_ context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error) {
			if q.Session == "sess_9" {
				return nil, fmt.Errorf("session sess_9: %w", jam.ErrNotFound)
			}
			empty := changeSetFixture
			empty.ID, empty.Origin, empty.Files, empty.Additions, empty.Deletions, empty.Turn = "cs_2", "salvage", nil, 0, 0, "turn_2"
			return []wire.ChangeSet{empty, changeSetFixture}, nil
		},
		ChangeSetFunc: func(_ context.Context, id string) (wire.ChangeSet, error) {
			if id != "cs_1" {
				return wire.ChangeSet{}, fmt.Errorf("change set %s: %w", id, jam.ErrNotFound)
			}
			return changeSetFixture, nil
		},
		ChangeSetPatchFunc: func(_ context.Context, id string) ([]byte, error) { return []byte(patch), nil },
		CheckpointsFunc: func(_ context.Context, s string) ([]wire.Checkpoint, error) {
			return []wire.Checkpoint{{ID: "snap_1", Session: s, Seq: 1, Turn: "turn_1", Phase: "turn_start", Ref: "refs/jam/checkpoints/sess_1/1", Commit: changeSetFixture.BaseCommit, Created: created}}, nil
		},
	}
	runCases(t, []cmdCase{
		{
			name:    "list",
			backend: backend{Results: results},
			inv:     invocation{args: []string{"changeset", "list"}},
			wantStdout: "CHANGESET  SESSION  TURN    ORIGIN   CHANGES                  CREATED\n" +
				"cs_2       sess_1   turn_2  salvage  no changes               " + at + "\n" +
				"cs_1       sess_1   turn_1  turn     4 files changed, +12 −4  " + at + "\n",
		},
		{
			name:       "list of an unknown session",
			backend:    backend{Results: results},
			inv:        invocation{args: []string{"changeset", "list", "sess_9"}},
			wantCode:   4,
			wantStderr: "jam: change sets: session sess_9: not found (not_found)\n",
		},
		{
			name:       "list --limit out of bounds",
			backend:    backend{Results: results},
			inv:        invocation{args: []string{"changeset", "list", "--limit", "501"}},
			wantCode:   2,
			wantStderr: "jam: --limit 501 is outside 1 to 500\n",
		},
		{
			name:    "show",
			backend: backend{Results: results},
			inv:     invocation{args: []string{"changeset", "show", "cs_1"}},
			wantStdout: "change set  cs_1\nsession     sess_1\nturn        turn_1\norigin      turn\nchanges     4 files changed, +12 −4\n" +
				"base        1111111111111111111111111111111111111111 (checkpoint snap_1)\nend         2222222222222222222222222222222222222222 (checkpoint snap_2)\n" +
				"patch       4096 bytes\ndigest      sha256:0123\ncreated     " + at + "\n\n" +
				"KIND          PATH                    MODE             +   −  SIZE  SHA-256\n" +
				"modified      main.go                 100644           10  4  120   bbbbbbbbbbbb\n" +
				"modified      run.sh                  100644 → 100755  0   0  9     cccccccccccc\n" +
				"added binary  logo.png                100644           -   -  2048  dddddddddddd\n" +
				"renamed       old.txt → new name.txt  100644           2   0  3     ffffffffffff\n",
		},
		{
			name:       "show of a foreign id",
			backend:    backend{Results: results},
			inv:        invocation{args: []string{"changeset", "show", "cs_other"}},
			wantCode:   4,
			wantStderr: "jam: change set cs_other: change set cs_other: not found (not_found)\n",
		},
		{
			name:       "diff without a terminal is the patch as it is",
			backend:    backend{Results: results},
			inv:        invocation{args: []string{"changeset", "diff", "cs_1"}},
			wantStdout: patch,
		},
		{
			name:    "diff --color always",
			backend: backend{Results: results},
			inv:     invocation{args: []string{"changeset", "diff", "cs_1", "--color", "always"}},
			wantStdout: "\x1b[1mdiff --git a/main.go b/main.go\x1b[m\n\x1b[1mindex 1..2 100644\x1b[m\n\x1b[1m--- a/main.go\x1b[m\n\x1b[1m+++ b/main.go\x1b[m\n" +
				"\x1b[36m@@ -1 +1 @@\x1b[m\n\x1b[31m-old\x1b[m\n\x1b[32m+new\x1b[m\n context\n",
		},
		{
			name:       "diff --color nonsense",
			backend:    backend{Results: results},
			inv:        invocation{args: []string{"changeset", "diff", "cs_1", "--color", "sometimes"}},
			wantCode:   2,
			wantStderr: "jam: --color \"sometimes\" is not auto, always or never\n",
		},
		{
			name:    "diff --stat",
			backend: backend{Results: results},
			inv:     invocation{args: []string{"changeset", "diff", "cs_1", "--stat"}},
			wantStdout: " main.go                | +10 −4\n run.sh                 | +0 −0\n logo.png               | binary, 2048 bytes\n old.txt → new name.txt | +2 −0\n" +
				" 4 files changed, +12 −4\n",
		},
		{
			name: "capture prints the change set as show does",
			backend: backend{Results: apitest.Results{CaptureChangeSetFunc: func(_ context.Context, session string, since int) (wire.ChangeSet, error) {
				if session != "sess_1" || since != 2 {
					return wire.ChangeSet{}, fmt.Errorf("got %s since %d", session, since)
				}
				cs := changeSetFixture
				cs.Files, cs.Additions, cs.Deletions, cs.Turn, cs.Origin = cs.Files[:1], 10, 4, "", "request"
				return cs, nil
			}}},
			inv: invocation{args: []string{"changeset", "capture", "sess_1", "--since", "2"}},
			wantStdout: "change set  cs_1\nsession     sess_1\nturn        -\norigin      request\nchanges     1 file changed, +10 −4\n" +
				"base        1111111111111111111111111111111111111111 (checkpoint snap_1)\nend         2222222222222222222222222222222222222222 (checkpoint snap_2)\n" +
				"patch       4096 bytes\ndigest      sha256:0123\ncreated     " + at + "\n\n" +
				"KIND      PATH     MODE    +   −  SIZE  SHA-256\n" +
				"modified  main.go  100644  10  4  120   bbbbbbbbbbbb\n",
		},
		{
			name: "capture --json",
			backend: backend{Results: apitest.Results{CaptureChangeSetFunc: func(_ context.Context, _ string, since int) (wire.ChangeSet, error) {
				return wire.ChangeSet{ID: "cs_3", Session: "sess_1", Origin: "request", Created: created}, nil
			}}},
			inv: invocation{args: []string{"changeset", "capture", "sess_1", "--json"}},
			wantJSON: `{"id":"cs_3","session":"sess_1","origin":"request","base_checkpoint":"","end_checkpoint":"","base_commit":"","end_commit":"",` +
				`"files":[],"additions":0,"deletions":0,"patch_bytes":0,"subject_digest":"","created_at":"2026-01-02T03:04:05Z"}`,
		},
		{
			name: "capture of a session without a checkpoint",
			backend: backend{Results: apitest.Results{CaptureChangeSetFunc: func(context.Context, string, int) (wire.ChangeSet, error) {
				return wire.ChangeSet{}, fmt.Errorf("session sess_1 has no checkpoint: %w", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"changeset", "capture", "sess_1"}},
			wantCode:   5,
			wantStderr: "jam: capture a change set of sess_1: session sess_1 has no checkpoint: conflict (conflict)\n",
		},
		{
			name: "capture of an unknown session",
			backend: backend{Results: apitest.Results{CaptureChangeSetFunc: func(context.Context, string, int) (wire.ChangeSet, error) {
				return wire.ChangeSet{}, fmt.Errorf("session sess_9: %w", jam.ErrNotFound)
			}}},
			inv:        invocation{args: []string{"changeset", "capture", "sess_9"}},
			wantCode:   4,
			wantStderr: "jam: capture a change set of sess_9: session sess_9: not found (not_found)\n",
		},
		{
			name:       "capture --since negative",
			backend:    backend{},
			inv:        invocation{args: []string{"changeset", "capture", "sess_1", "--since", "-1"}},
			wantCode:   2,
			wantStderr: "jam: --since -1 is not a checkpoint number (1, 2, …)\n",
		},
		{
			name:       "checkpoint list",
			backend:    backend{Results: results},
			inv:        invocation{args: []string{"checkpoint", "list", "sess_1"}},
			wantStdout: "N  CHECKPOINT  TURN    PHASE       COMMIT        CREATED\n1  snap_1      turn_1  turn_start  111111111111  " + at + "\n",
		},
		{
			name:     "checkpoint list --json",
			backend:  backend{Results: apitest.Results{CheckpointsFunc: func(context.Context, string) ([]wire.Checkpoint, error) { return nil, nil }}},
			inv:      invocation{args: []string{"checkpoint", "list", "sess_1", "--json"}},
			wantJSON: `{"checkpoints":[]}`,
		},
	})
	assert.NotEmpty(t, changeSetFixture.Files)
}
