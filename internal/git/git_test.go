package git_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
)

// commitID is what a full SHA-1 or SHA-256 object name looks like.
var commitID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// person commits in the tests' own repositories: an identity of its own,
// so the tests can tell its commits from jam's.
var person = []string{"-c", "user.name=pat", "-c", "user.email=pat@example.com", "-c", "commit.gpgsign=false"}

// emptyRepo makes a repository without commits, in a directory whose name
// has a space.
func emptyRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(t.TempDir(), "my repo")
	require.NoError(t, os.Mkdir(dir, 0o755))
	run(t, dir, "init", "-q", "-b", "main")
	return dir
}

// repo makes a repository with one commit of README.
func repo(t *testing.T) string {
	t.Helper()
	dir := emptyRepo(t)
	write(t, dir, "README", "hello\n")
	run(t, dir, "add", "README")
	run(t, dir, append(append([]string{}, person...), "commit", "-q", "-m", "init")...)
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git.Run(t.Context(), dir, args...)
	require.NoError(t, err)
	return out
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// gitError asserts err is a *git.Error of kind and that git's own text
// contains stderr.
func gitError(t *testing.T, err error, kind error, stderr string) *git.Error {
	t.Helper()
	var e *git.Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, err, kind)
	require.Contains(t, e.Stderr, stderr)
	require.Contains(t, err.Error(), stderr, "the message carries git's words")
	require.NotZero(t, e.ExitCode)
	return e
}

func TestTopLevel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)
	write(t, dir, "sub dir/x", "x")

	top, err := git.TopLevel(ctx, filepath.Join(dir, "sub dir"))
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	require.Equal(t, want, top)
	ok, err := git.IsRepository(ctx, filepath.Join(dir, "sub dir"))
	require.NoError(t, err)
	require.True(t, ok)

	ok, err = git.IsRepository(ctx, emptyRepo(t))
	require.NoError(t, err)
	require.True(t, ok, "a repository without commits is a repository")

	plain := t.TempDir()
	_, err = git.TopLevel(ctx, plain)
	e := gitError(t, err, jam.ErrInvalid, "not a git repository")
	require.Equal(t, plain, e.Dir)
	require.True(t, strings.HasPrefix(err.Error(), "git rev-parse: fatal: not a git repository"), err.Error())
	ok, err = git.IsRepository(ctx, plain)
	require.NoError(t, err)
	require.False(t, ok)

	_, err = git.IsRepository(ctx, filepath.Join(plain, "gone"))
	gitError(t, err, jam.ErrNotFound, "cannot change to")
}

func TestHead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	_, err := git.Head(ctx, emptyRepo(t))
	require.ErrorIs(t, err, jam.ErrNotFound)
	require.ErrorContains(t, err, "no commits yet")

	dir := repo(t)
	head, err := git.Head(ctx, dir)
	require.NoError(t, err)
	require.Regexp(t, commitID, head)
	require.Equal(t, run(t, dir, "rev-parse", "main"), head)

	// A detached HEAD names its commit; a branch made from it starts there.
	write(t, dir, "README", "second\n")
	second, err := git.CommitAll(ctx, dir, dir, "second")
	require.NoError(t, err)
	require.NotEqual(t, head, second)
	run(t, dir, "checkout", "-q", "--detach", head)
	detached, err := git.Head(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, head, detached)
	wt := filepath.Join(t.TempDir(), "from detached")
	require.NoError(t, git.WorktreeAddBranch(ctx, dir, wt, "jam/detached"))
	got, err := git.Head(ctx, wt)
	require.NoError(t, err)
	require.Equal(t, head, got, "the new branch starts at the detached HEAD, not at main")
	require.Equal(t, "jam/detached", run(t, wt, "rev-parse", "--abbrev-ref", "HEAD"))
}

func TestWorktree_addRemovePrune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)
	root := filepath.Join(t.TempDir(), "work trees")
	wt := filepath.Join(root, "session one")

	require.NoError(t, git.WorktreeAddBranch(ctx, dir, wt, "jam/one"))
	require.FileExists(t, filepath.Join(wt, "README"))
	require.Equal(t, "jam/one", run(t, wt, "rev-parse", "--abbrev-ref", "HEAD"))
	require.Contains(t, run(t, dir, "worktree", "list", "--porcelain"), "worktree "+wt+"\n")
	exists, err := git.BranchExists(ctx, dir, "jam/one")
	require.NoError(t, err)
	require.True(t, exists)

	// The same branch again, or another branch at the same path.
	err = git.WorktreeAddBranch(ctx, dir, filepath.Join(root, "other"), "jam/one")
	gitError(t, err, jam.ErrAlreadyExists, "a branch named 'jam/one' already exists")
	err = git.WorktreeAddBranch(ctx, dir, wt, "jam/two")
	gitError(t, err, jam.ErrAlreadyExists, "already exists")
	// A branch checked out elsewhere cannot be checked out twice.
	err = git.WorktreeAdd(ctx, dir, filepath.Join(root, "twice"), "jam/one")
	gitError(t, err, jam.ErrConflict, "jam/one")

	// A dirty worktree is refused unless forced.
	write(t, wt, "NOTES.md", "draft\n")
	err = git.WorktreeRemove(ctx, dir, wt, false)
	gitError(t, err, jam.ErrConflict, "contains modified or untracked files")
	require.FileExists(t, filepath.Join(wt, "NOTES.md"))
	require.NoError(t, git.WorktreeRemove(ctx, dir, wt, true))
	require.NoDirExists(t, wt)
	err = git.WorktreeRemove(ctx, dir, wt, true)
	gitError(t, err, jam.ErrNotFound, "is not a working tree")

	// The branch stays and can be checked out again.
	require.NoError(t, git.WorktreeAdd(ctx, dir, wt, "jam/one"))
	require.NoFileExists(t, filepath.Join(wt, "NOTES.md"), "the forced removal discarded it")

	// A directory deleted behind git's back is forgotten by prune.
	require.NoError(t, os.RemoveAll(wt))
	require.Contains(t, run(t, dir, "worktree", "list", "--porcelain"), wt)
	require.NoError(t, git.WorktreePrune(ctx, dir))
	require.NotContains(t, run(t, dir, "worktree", "list", "--porcelain"), wt)

	require.NoError(t, git.BranchDelete(ctx, dir, "jam/one"))
	exists, err = git.BranchExists(ctx, dir, "jam/one")
	require.NoError(t, err)
	require.False(t, exists)
}

func TestWorktree_badRef(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)

	err := git.WorktreeAdd(ctx, dir, filepath.Join(t.TempDir(), "wt"), "no-such-branch")
	e := gitError(t, err, jam.ErrNotFound, "invalid reference: no-such-branch")
	require.Equal(t, 128, e.ExitCode)
	require.Equal(t, "git worktree add: fatal: invalid reference: no-such-branch", err.Error())

	err = git.BranchDelete(ctx, dir, "no-such-branch")
	gitError(t, err, jam.ErrNotFound, "branch 'no-such-branch' not found")

	_, err = git.Run(ctx, dir, "show", "no-such-branch:README")
	gitError(t, err, jam.ErrNotFound, "no-such-branch")

	// A repository without commits has no HEAD to branch from.
	err = git.WorktreeAddBranch(ctx, emptyRepo(t), filepath.Join(t.TempDir(), "wt"), "jam/x")
	gitError(t, err, jam.ErrNotFound, "HEAD")

	// Not a repository at all.
	err = git.WorktreeAddBranch(ctx, t.TempDir(), filepath.Join(t.TempDir(), "wt"), "jam/x")
	gitError(t, err, jam.ErrInvalid, "not a git repository")
}

func TestStatus(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)

	changes, err := git.Status(ctx, dir, dir)
	require.NoError(t, err)
	require.Empty(t, changes, "clean")

	write(t, dir, "tracked", "v1\n")
	write(t, dir, "old name.txt", "moving\n")
	run(t, dir, "add", "--all")
	run(t, dir, append(append([]string{}, person...), "commit", "-q", "-m", "more")...)

	write(t, dir, "README", "changed\n")                         // modified
	require.NoError(t, os.Remove(filepath.Join(dir, "tracked"))) // deleted
	run(t, dir, "mv", "old name.txt", "new name.txt")            // renamed, staged
	write(t, dir, "notes/a b.md", "x")                           // untracked, in a new directory
	write(t, dir, " lead.txt", "x")                              // a name that starts with a blank
	write(t, dir, "quote\"é.txt", "x")                           // a name git would quote
	write(t, dir, ".gitignore", "*.log\n")
	write(t, dir, "debug.log", "ignored")

	changes, err = git.Status(ctx, dir, dir)
	require.NoError(t, err)
	got := map[string]git.Change{}
	for _, c := range changes {
		got[c.Path] = c
	}
	require.Equal(t, map[string]git.Change{
		"README":       {XY: " M", Path: "README"},
		"tracked":      {XY: " D", Path: "tracked"},
		"new name.txt": {XY: "R ", Path: "new name.txt", From: "old name.txt"},
		"notes/a b.md": {XY: "??", Path: "notes/a b.md"},
		" lead.txt":    {XY: "??", Path: " lead.txt"},
		"quote\"é.txt": {XY: "??", Path: "quote\"é.txt"},
		".gitignore":   {XY: "??", Path: ".gitignore"},
	}, got)
	require.Equal(t, "R  old name.txt -> new name.txt", got["new name.txt"].String())
	require.Equal(t, "?? notes/a b.md", got["notes/a b.md"].String())

	_, err = git.Status(ctx, t.TempDir(), t.TempDir())
	require.ErrorIs(t, err, jam.ErrInvalid)
}

func TestCommitAll(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)
	before, err := git.Head(ctx, dir)
	require.NoError(t, err)

	// The person's hooks and signing setup do not apply to jam's commits.
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\necho refused by hook >&2\nexit 1\n"), 0o755))
	run(t, dir, "config", "commit.gpgsign", "true")
	run(t, dir, "config", "user.signingkey", "no-such-key")

	write(t, dir, "README", "edited\n")
	write(t, dir, "dir with space/new file", "new\n")
	commit, err := git.CommitAll(ctx, dir, dir, "jam: work at archive")
	require.NoError(t, err)
	require.Regexp(t, commitID, commit)
	require.Equal(t, before, run(t, dir, "rev-parse", commit+"^"))
	require.Equal(t, "jam <jam@localhost>|jam <jam@localhost>|jam: work at archive",
		run(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"))
	require.Equal(t, "new", run(t, dir, "show", commit+":dir with space/new file"))
	changes, err := git.Status(ctx, dir, dir)
	require.NoError(t, err)
	require.Empty(t, changes)

	// Nothing to commit is git's error, with its words.
	_, err = git.CommitAll(ctx, dir, dir, "empty")
	var e *git.Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Args, "commit")
	require.Contains(t, err.Error(), "git commit: ")

	// The person's own commits still run the hook: it is installed. No
	// git call of jam's runs it, not even through Run.
	write(t, dir, "README", "again\n")
	run(t, dir, "add", "README")
	commitArgs := append(append([]string{}, person...), "-c", "commit.gpgsign=false", "commit", "-q", "-m", "x")
	out, err := exec.Command("git", append([]string{"-C", dir}, commitArgs...)...).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "refused by hook")
	_, err = git.Run(ctx, dir, commitArgs...)
	require.NoError(t, err)
}

func TestRun_cancelled(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := git.Run(ctx, dir, "status")
	require.ErrorIs(t, err, context.Canceled)
	var e *git.Error
	require.False(t, errors.As(err, &e), "a cancelled command is not git's failure")
}
