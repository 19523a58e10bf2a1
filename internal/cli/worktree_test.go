package cli_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var worktreeFixture = wire.Worktree{ID: "wt_1", Session: "sess_1", Agent: "local/demo", Room: "r1", Repo: "/src/app", Path: "/data/worktrees/sess_1",
	Branch: "jam/sess_1", State: "active", Changes: 2, Updated: created}

func TestWorktreeCommands(t *testing.T) {
	t.Parallel()
	list := func(context.Context) ([]wire.Worktree, error) {
		archived := worktreeFixture
		archived.Session, archived.State, archived.Changes = "sess_2", "archived", 0
		return []wire.Worktree{worktreeFixture, archived}, nil
	}
	archive := func(_ context.Context, s string) (wire.Worktree, error) {
		assert.Equal(t, "sess_1", s)
		w := worktreeFixture
		w.State = "archived"
		return w, nil
	}
	forbidden := func(t *testing.T) func(context.Context, string) (wire.Worktree, error) {
		return func(context.Context, string) (wire.Worktree, error) {
			t.Error("the worktree was changed without confirmation")
			return wire.Worktree{}, nil
		}
	}
	runCases(t, []cmdCase{
		{
			name:       "list",
			backend:    backend{WorktreesFunc: list},
			inv:        invocation{args: []string{"worktree", "list"}},
			wantStdout: "SESSION  AGENT       STATE     CHANGES  BRANCH      PATH\nsess_1   local/demo  active    2        jam/sess_1  /data/worktrees/sess_1\nsess_2   local/demo  archived  -        jam/sess_1  /data/worktrees/sess_1\n",
		},
		{
			name:     "list --json",
			backend:  backend{WorktreesFunc: func(context.Context) ([]wire.Worktree, error) { return nil, nil }},
			inv:      invocation{args: []string{"worktree", "list", "--json"}},
			wantJSON: `{"worktrees":[]}`,
		},
		{
			name:       "archive without a terminal or --yes refuses",
			backend:    backend{WorktreeArchiveFunc: forbidden(t)},
			inv:        invocation{args: []string{"worktree", "archive", "sess_1"}},
			wantCode:   2,
			wantStderr: "jam: refusing to archive the worktree of sess_1 without confirmation: no terminal to ask on (pass --yes)\n",
		},
		{
			name:       "archive --yes",
			backend:    backend{WorktreeArchiveFunc: archive},
			inv:        invocation{args: []string{"worktree", "archive", "sess_1", "--yes"}},
			wantStdout: "archived the worktree of sess_1: /data/worktrees/sess_1 deleted, branch jam/sess_1 kept\n",
		},
		{
			name:       "archive confirmed on a terminal",
			backend:    backend{WorktreesFunc: list, WorktreeArchiveFunc: archive},
			inv:        invocation{args: []string{"worktree", "archive", "sess_1"}, interactive: true, stdin: "y\n"},
			wantStdout: "archived the worktree of sess_1: /data/worktrees/sess_1 deleted, branch jam/sess_1 kept\n",
			wantStderr: "Archive the worktree of sess_1 (/data/worktrees/sess_1)? Its 2 uncommitted change(s) are committed to branch jam/sess_1, the directory is deleted, and the session's messages wait until it is restored. [y/N] ",
		},
		{
			name:       "archive declined on a terminal",
			backend:    backend{WorktreesFunc: list, WorktreeArchiveFunc: forbidden(t)},
			inv:        invocation{args: []string{"worktree", "archive", "sess_1"}, interactive: true, stdin: "\n"},
			wantCode:   1,
			wantStderr: "Archive the worktree of sess_1 (/data/worktrees/sess_1)? Its 2 uncommitted change(s) are committed to branch jam/sess_1, the directory is deleted, and the session's messages wait until it is restored. [y/N] jam: nothing changed\n",
		},
		{
			name:       "archive of an unknown session on a terminal",
			backend:    backend{WorktreesFunc: list, WorktreeArchiveFunc: forbidden(t)},
			inv:        invocation{args: []string{"worktree", "archive", "sess_9"}, interactive: true, stdin: "y\n"},
			wantCode:   4,
			wantStderr: "jam: no worktree for session sess_9 (see jam worktree list)\n",
		},
		{
			name: "remove without a terminal or --yes refuses",
			backend: backend{WorktreeRemoveFunc: func(context.Context, string, wire.WorktreeRemoveRequest) (wire.Worktree, error) {
				t.Error("removed")
				return wire.Worktree{}, nil
			}},
			inv:        invocation{args: []string{"worktree", "remove", "sess_1", "--force"}},
			wantCode:   2,
			wantStderr: "jam: refusing to remove the worktree of sess_1 without confirmation: no terminal to ask on (pass --yes)\n",
		},
		{
			name: "remove with uncommitted changes is refused by the daemon",
			backend: backend{WorktreeRemoveFunc: func(_ context.Context, _ string, r wire.WorktreeRemoveRequest) (wire.Worktree, error) {
				assert.False(t, r.Force)
				return wire.Worktree{}, jam.ErrConflict
			}},
			inv:        invocation{args: []string{"worktree", "remove", "sess_1", "-y"}},
			wantCode:   5,
			wantStderr: "jam: remove the worktree of sess_1: conflict (conflict)\n",
		},
		{
			name: "remove --force confirmed on a terminal",
			backend: backend{WorktreesFunc: list, WorktreeRemoveFunc: func(_ context.Context, s string, r wire.WorktreeRemoveRequest) (wire.Worktree, error) {
				assert.True(t, r.Force)
				w := worktreeFixture
				w.State = "removed"
				return w, nil
			}},
			inv:        invocation{args: []string{"worktree", "remove", "sess_1", "--force"}, interactive: true, stdin: "yes\n"},
			wantStdout: "removed the worktree of sess_1: /data/worktrees/sess_1 deleted, branch jam/sess_1 deleted\n",
			wantStderr: "Remove the worktree of sess_1? This deletes /data/worktrees/sess_1 and branch jam/sess_1 with every commit on it, discarding 2 uncommitted change(s). [y/N] ",
		},
		{
			name: "restore needs no confirmation",
			backend: backend{WorktreeRestoreFunc: func(_ context.Context, s string, _ wire.WorktreeRestoreRequest) (wire.Worktree, error) {
				return worktreeFixture, nil
			}},
			inv:        invocation{args: []string{"worktree", "restore", "sess_1"}},
			wantStdout: "restored the worktree of sess_1 at /data/worktrees/sess_1\n",
		},
	})
}

// TestWorktreeRemove_confirmationGuardsTheCall: a declined remove makes
// no request at all.
func TestWorktreeRemove_confirmationGuardsTheCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	b := setup(t, backend{
		WorktreesFunc: func(context.Context) ([]wire.Worktree, error) { return []wire.Worktree{worktreeFixture}, nil },
		WorktreeRemoveFunc: func(context.Context, string, wire.WorktreeRemoveRequest) (wire.Worktree, error) {
			calls.Add(1)
			return worktreeFixture, nil
		},
	})
	for _, answer := range []string{"n\n", "", "no\n", "maybe\n"} {
		r := b.run(t, invocation{args: []string{"worktree", "remove", "sess_1"}, interactive: true, stdin: answer})
		require.Equal(t, 1, r.code, "answer %q", answer)
	}
	require.Zero(t, calls.Load())
	r := b.run(t, invocation{args: []string{"worktree", "remove", "sess_1"}, interactive: true, stdin: "Y\n"})
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, int32(1), calls.Load())
}
