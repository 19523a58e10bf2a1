package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestNewWorktree(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := t.Context()
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		out, err := git(ctx, repo, args...)
		require.NoError(t, err, out)
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("x"), 0o644))
	m := jam.NewMinter(nil, nil)
	root := filepath.Join(t.TempDir(), "worktrees")
	s := store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: jam.New[jam.WorkspaceID](m)}

	withRepo := store.Template{Desired: store.TemplateConfig{Repo: repo}}
	w, err := NewWorktree(ctx, root, jam.New[jam.WorktreeID](m), withRepo, s, time.Now())
	require.NoError(t, err)
	require.Equal(t, "jam/"+string(s.ID), w.Branch)
	require.Equal(t, filepath.Join(root, string(s.ID)), w.Path)
	branch, err := git(ctx, w.Path, "rev-parse", "--abbrev-ref", "HEAD")
	require.NoError(t, err)
	require.Equal(t, w.Branch, branch, "the worktree is on the session's own branch")
	list, err := git(ctx, repo, "worktree", "list", "--porcelain")
	require.NoError(t, err)
	require.Contains(t, list, w.Path)

	// Preparing it again (a crash before it was recorded) reuses it.
	again, err := NewWorktree(ctx, root, jam.New[jam.WorktreeID](m), withRepo, s, time.Now())
	require.NoError(t, err)
	require.Equal(t, w.Path, again.Path)

	// Without a repository: an empty directory.
	s2 := store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: s.WorkspaceID}
	plain, err := NewWorktree(ctx, root, jam.New[jam.WorktreeID](m), store.Template{}, s2, time.Now())
	require.NoError(t, err)
	require.Empty(t, plain.Branch)
	entries, err := os.ReadDir(plain.Path)
	require.NoError(t, err)
	require.Empty(t, entries)

	// A repository that is not one fails clearly.
	_, err = NewWorktree(ctx, root, jam.New[jam.WorktreeID](m), store.Template{Desired: store.TemplateConfig{Repo: t.TempDir()}},
		store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: s.WorkspaceID}, time.Now())
	require.ErrorContains(t, err, "git worktree add")
}
