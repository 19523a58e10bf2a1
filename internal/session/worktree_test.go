package session

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// gitRepo makes a repository with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		out, err := git(t.Context(), repo, args...)
		require.NoError(t, err, out)
	}
	return repo
}

// gitSession adds a session of the bundle's template, in another room,
// with a git worktree of repo.
func (b *bundle) gitSession(t *testing.T, repo string) (store.Session, store.Worktree) {
	t.Helper()
	ctx := t.Context()
	s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.m), WorkspaceID: b.ws, TemplateID: b.sess.TemplateID, Peer: b.sess.Peer,
		Room: "0190a1b2-0000-4000-8000-0000000000bb", CreatedAt: time.Now()})
	require.NoError(t, err)
	w, err := worktree.New(ctx, filepath.Join(t.TempDir(), "worktrees"), jam.New[jam.WorktreeID](b.m), store.Template{Desired: store.TemplateConfig{Repo: repo}}, s, time.Now())
	require.NoError(t, err)
	w, err = b.st.WorktreePut(ctx, w)
	require.NoError(t, err)
	return s, w
}

// TestManager_worktreeArchiveRestoreRemove walks a session's worktree
// through its states with real git: archive keeps the uncommitted work on
// the branch and makes the session's turns wait; restore brings the work
// back and the waiting turn runs; remove refuses uncommitted changes
// unless forced, then deletes the directory and the branch.
func TestManager_worktreeArchiveRestoreRemove(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	b := setup(t)
	ctx := t.Context()
	s, w := b.gitSession(t, repo)
	var prompts sync.Map
	m := b.manager(t, func(text string) (harness.Outcome, error) {
		prompts.Store(text, true)
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "ok"}, nil
	})
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "NOTES.md"), []byte("work in progress\n"), 0o644))
	changes, err := worktree.Changes(ctx, w)
	require.NoError(t, err)
	require.Equal(t, []string{"?? NOTES.md"}, changes)

	archived, err := m.ArchiveWorktree(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorktreeArchived, archived.State)
	require.NoDirExists(t, w.Path)
	kept, err := git(ctx, repo, "show", w.Branch+":NOTES.md")
	require.NoError(t, err, kept)
	require.Equal(t, "work in progress", kept, "the uncommitted work is on the branch")
	_, err = m.ArchiveWorktree(ctx, s.ID)
	require.ErrorIs(t, err, jam.ErrConflict, "already archived")

	// A message for the session waits while its worktree is archived.
	msg := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000031")
	require.NoError(t, m.Deliver(ctx, engine.Delivery{Binding: store.Binding{SessionID: s.ID, Mode: jam.RuntimeOwned, Peer: s.Peer, Room: s.Room},
		Row: store.QueueRow{MessageID: msg}}))
	turns, err := b.st.TurnList(ctx, b.ws, s.ID)
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.Equal(t, jam.TurnQueued, turns[0].State)
	require.Never(t, func() bool {
		turns, err := b.st.TurnList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		return turns[0].State != jam.TurnQueued
	}, 500*time.Millisecond, 10*time.Millisecond, "the turn waits while the worktree is archived")
	_, seen := prompts.Load("ann wrote in the room:\ndo " + string(msg))
	require.False(t, seen)

	restored, err := m.RestoreWorktree(ctx, s.ID, 0)
	require.NoError(t, err)
	require.Equal(t, store.WorktreeActive, restored.State)
	notes, err := os.ReadFile(filepath.Join(w.Path, "NOTES.md"))
	require.NoError(t, err)
	require.Equal(t, "work in progress\n", string(notes))
	require.Equal(t, msg, <-b.set.done, "the waiting turn runs once the worktree is back")
	_, err = m.RestoreWorktree(ctx, s.ID, 0)
	require.ErrorIs(t, err, jam.ErrConflict, "already active")
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		return turns[0].State == jam.TurnSucceeded
	}, 30*time.Second, 5*time.Millisecond)

	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "NOTES.md"), []byte("changed\n"), 0o644))
	// The worker lets go of the session just after the turn's end.
	require.Eventually(t, func() bool {
		_, err = m.RemoveWorktree(ctx, s.ID, false)
		return err != nil && !strings.Contains(err.Error(), "busy")
	}, 30*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, err, jam.ErrConflict)
	require.ErrorContains(t, err, "NOTES.md")
	require.DirExists(t, w.Path, "a refused remove leaves everything")
	removed, err := m.RemoveWorktree(ctx, s.ID, true)
	require.NoError(t, err)
	require.Equal(t, store.WorktreeRemoved, removed.State)
	require.NoDirExists(t, w.Path)
	_, err = git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+w.Branch)
	require.Error(t, err, "the branch is gone")
	list, err := git(ctx, repo, "worktree", "list")
	require.NoError(t, err)
	require.NotContains(t, list, w.Path, "pruned")

	// Restoring a removed worktree makes a new one on a new branch.
	_, err = m.RestoreWorktree(ctx, s.ID, 0)
	require.NoError(t, err)
	require.NoFileExists(t, filepath.Join(w.Path, "NOTES.md"))
	head, err := git(ctx, w.Path, "rev-parse", "--abbrev-ref", "HEAD")
	require.NoError(t, err)
	require.Equal(t, w.Branch, head)
}

// TestManager_worktreeRefusedWhileATurnRuns: a worktree operation cannot
// pull the directory from under a running turn.
func TestManager_worktreeRefusedWhileATurnRuns(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	b := setup(t)
	ctx := t.Context()
	s, w := b.gitSession(t, repo)
	h := &gatedHost{fakeHost: fakeHost{exited: make(chan struct{})}, opening: make(chan struct{}, 1), release: make(chan struct{}), prompts: make(chan string, 4)}
	close(h.release)
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	defer func() { require.NoError(t, m.Stop(context.Background())) }()

	require.NoError(t, m.Deliver(ctx, engine.Delivery{Binding: store.Binding{SessionID: s.ID, Mode: jam.RuntimeOwned, Peer: s.Peer, Room: s.Room},
		Row: store.QueueRow{MessageID: "0190a1b2-0000-4000-8000-000000000032"}}))
	<-h.prompts // the turn runs
	_, err = m.ArchiveWorktree(ctx, s.ID)
	require.ErrorIs(t, err, jam.ErrConflict)
	require.ErrorContains(t, err, "a turn is running")
	_, err = m.RemoveWorktree(ctx, s.ID, true)
	require.ErrorIs(t, err, jam.ErrConflict, "not even forced")
	require.DirExists(t, w.Path)

	turns, err := b.st.TurnList(ctx, b.ws, s.ID)
	require.NoError(t, err)
	require.NoError(t, m.Cancel(ctx, turns[0].ID))
	require.Eventually(t, func() bool {
		_, err := m.ArchiveWorktree(ctx, s.ID)
		return err == nil
	}, 30*time.Second, 5*time.Millisecond, "archived once the turn ended")
	require.NoDirExists(t, w.Path)
}
