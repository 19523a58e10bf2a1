package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	gitcli "github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// git runs the git CLI in dir for the tests, which set up and inspect
// repositories with commands the product code has no use for.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitcli.Run(ctx, dir, args...)
}

func TestNew(t *testing.T) {
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
	w, err := New(ctx, root, jam.New[jam.WorktreeID](m), withRepo, s, time.Now())
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
	again, err := New(ctx, root, jam.New[jam.WorktreeID](m), withRepo, s, time.Now())
	require.NoError(t, err)
	require.Equal(t, w.Path, again.Path)

	// Without a repository: an empty directory.
	s2 := store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: s.WorkspaceID}
	plain, err := New(ctx, root, jam.New[jam.WorktreeID](m), store.Template{}, s2, time.Now())
	require.NoError(t, err)
	require.Empty(t, plain.Branch)
	entries, err := os.ReadDir(plain.Path)
	require.NoError(t, err)
	require.Empty(t, entries)

	// A repository that is not one fails clearly.
	_, err = New(ctx, root, jam.New[jam.WorktreeID](m), store.Template{Desired: store.TemplateConfig{Repo: t.TempDir()}},
		store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: s.WorkspaceID}, time.Now())
	require.ErrorContains(t, err, "git worktree add")
}

// gitRepo makes a repository whose one commit has a tracked file and a
// .gitignore that ignores *.log.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("*.log\n"), 0o644))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "main.go", ".gitignore"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
	} {
		out, err := git(t.Context(), repo, args...)
		require.NoError(t, err, out)
	}
	return repo
}

// newWorktree creates a worktree of repo (or a plain directory when repo
// is empty) for a new session.
func newWorktree(t *testing.T, repo string) store.Worktree {
	t.Helper()
	m := jam.NewMinter(nil, nil)
	s := store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: jam.New[jam.WorkspaceID](m)}
	w, err := New(t.Context(), filepath.Join(t.TempDir(), "worktrees"), jam.New[jam.WorktreeID](m),
		store.Template{Desired: store.TemplateConfig{Repo: repo}}, s, time.Now())
	require.NoError(t, err)
	return w
}

// TestArchiveRestore: archive commits every change, tracked or not, to the
// branch and removes the directory; only ignored files are lost; restore
// checks the same work out again.
func TestArchiveRestore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := gitRepo(t)
	w := newWorktree(t, repo)
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "main.go"), []byte("package main // edited\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "NOTES.md"), []byte("work in progress\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "build.log"), []byte("ignored\n"), 0o644))
	changes, err := Changes(ctx, w)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{" M main.go", "?? NOTES.md"}, changes)

	require.NoError(t, Archive(ctx, w))
	require.NoDirExists(t, w.Path)
	changes, err = Changes(ctx, w)
	require.NoError(t, err)
	require.Empty(t, changes, "no changes once the directory is gone")
	for file, want := range map[string]string{"main.go": "package main // edited", "NOTES.md": "work in progress"} {
		kept, err := git(ctx, repo, "show", w.Branch+":"+file)
		require.NoError(t, err, kept)
		require.Equal(t, want, kept, "%s is on the branch", file)
	}
	_, err = git(ctx, repo, "show", w.Branch+":build.log")
	require.Error(t, err, "an ignored file is not committed")
	list, err := git(ctx, repo, "worktree", "list")
	require.NoError(t, err)
	require.NotContains(t, list, w.Path, "pruned")

	require.NoError(t, Restore(ctx, w))
	notes, err := os.ReadFile(filepath.Join(w.Path, "NOTES.md"))
	require.NoError(t, err)
	require.Equal(t, "work in progress\n", string(notes))
	require.NoFileExists(t, filepath.Join(w.Path, "build.log"))
	head, err := git(ctx, w.Path, "rev-parse", "--abbrev-ref", "HEAD")
	require.NoError(t, err)
	require.Equal(t, w.Branch, head)
	changes, err = Changes(ctx, w)
	require.NoError(t, err)
	require.Empty(t, changes, "the restored worktree is clean")
	require.NoError(t, Restore(ctx, w), "restoring a worktree already on disk reuses it")
}

// TestArchivePlainDirectory: a plain directory has no branch to keep.
func TestArchivePlainDirectory(t *testing.T) {
	t.Parallel()
	w := newWorktree(t, "")
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "a.txt"), []byte("a"), 0o644))
	changes, err := Changes(t.Context(), w)
	require.NoError(t, err)
	require.Equal(t, []string{"?? a.txt"}, changes)
	err = Archive(t.Context(), w)
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.FileExists(t, filepath.Join(w.Path, "a.txt"), "a refused archive leaves everything")

	require.NoError(t, Remove(t.Context(), w, true))
	require.NoDirExists(t, w.Path)
	require.NoError(t, Restore(t.Context(), w))
	require.DirExists(t, w.Path)
}

// TestRemove: remove refuses uncommitted changes unless forced, then
// deletes the directory and the branch; restore makes a new branch from
// the repository's HEAD.
func TestRemove(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := gitRepo(t)
	w := newWorktree(t, repo)
	for _, f := range []string{"a", "b", "c", "d"} {
		require.NoError(t, os.WriteFile(filepath.Join(w.Path, f), []byte(f), 0o644))
	}
	err := Remove(ctx, w, false)
	require.ErrorIs(t, err, jam.ErrConflict)
	require.ErrorContains(t, err, "4 uncommitted change(s) (?? a, ?? b, ?? c, …)")
	require.FileExists(t, filepath.Join(w.Path, "a"), "a refused remove leaves everything")

	require.NoError(t, Remove(ctx, w, true))
	require.NoDirExists(t, w.Path)
	_, err = git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+w.Branch)
	require.Error(t, err, "the branch is gone")

	require.NoError(t, Restore(ctx, w))
	require.NoFileExists(t, filepath.Join(w.Path, "a"))
	require.FileExists(t, filepath.Join(w.Path, "main.go"))
	head, err := git(ctx, w.Path, "rev-parse", "--abbrev-ref", "HEAD")
	require.NoError(t, err)
	require.Equal(t, w.Branch, head)
}

// TestRemoveArchived: removing an archived worktree deletes its kept
// branch.
func TestRemoveArchived(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := gitRepo(t)
	w := newWorktree(t, repo)
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "NOTES.md"), []byte("x"), 0o644))
	require.NoError(t, Archive(ctx, w))
	require.NoError(t, Remove(ctx, w, false), "nothing uncommitted: the work is on the branch")
	_, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+w.Branch)
	require.Error(t, err, "the branch is gone")
}

// TestNewAt: a worktree started at a commit that is not HEAD has that
// commit's files, on the session's own branch; without a repository a
// commit is refused; an unknown commit fails and leaves no branch.
func TestNewAt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := gitRepo(t)
	first, err := git(ctx, repo, "rev-parse", "HEAD")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main // later\n"), 0o644))
	out, err := git(ctx, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", "later")
	require.NoError(t, err, out)

	m := jam.NewMinter(nil, nil)
	root := filepath.Join(t.TempDir(), "worktrees")
	s := store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: jam.New[jam.WorkspaceID](m)}
	tm := store.Template{Desired: store.TemplateConfig{Repo: repo}}
	w, err := NewAt(ctx, root, jam.New[jam.WorktreeID](m), tm, s, time.Now(), first)
	require.NoError(t, err)
	head, err := git(ctx, w.Path, "rev-parse", "HEAD")
	require.NoError(t, err)
	require.Equal(t, first, head)
	body, err := os.ReadFile(filepath.Join(w.Path, "main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main\n", string(body), "the commit's files, not HEAD's")
	branch, err := git(ctx, w.Path, "rev-parse", "--abbrev-ref", "HEAD")
	require.NoError(t, err)
	require.Equal(t, "jam/"+string(s.ID), branch)

	_, err = NewAt(ctx, root, jam.New[jam.WorktreeID](m), store.Template{}, store.Session{ID: jam.New[jam.SessionID](m)}, time.Now(), first)
	require.ErrorIs(t, err, jam.ErrInvalid)

	other := store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: s.WorkspaceID}
	_, err = NewAt(ctx, root, jam.New[jam.WorktreeID](m), tm, other, time.Now(), "0123456789abcdef0123456789abcdef01234567")
	require.Error(t, err)
	exists, err := gitcli.BranchExists(ctx, repo, "jam/"+string(other.ID))
	require.NoError(t, err)
	require.False(t, exists, "a failed start leaves no branch")
}
