package git_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/git/gittest"
	"github.com/jamhq/jam/internal/jam"
)

// TestHostile_nothingPlantedRuns plants every program git can be made to
// run, in the repository's config (and files it includes), its hooks,
// the attributes on the branch, and a worktree whose .git file an agent
// rewrote to a gitdir of its own; then runs every operation jam runs on a
// session's worktree: check out, status, commit everything, remove,
// check out again, delete the branch. Nothing planted runs, and status
// and the commit see the real worktree and branch, not the agent's
// gitdir or its core.worktree.
func TestHostile_nothingPlantedRuns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)
	markers := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("planted programs that ran: %v", gittest.Fired(t, markers))
		}
	})
	gittest.PlantRepo(t, dir, markers)
	wt := filepath.Join(t.TempDir(), "session")

	require.NoError(t, git.WorktreeAddBranch(ctx, dir, wt, "jam/s"))
	require.FileExists(t, filepath.Join(wt, "a.txt"))
	gittest.PlantWorktree(t, wt, markers)

	changes, err := git.Status(ctx, dir, wt)
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range changes {
		got[c.Path] = c.XY
	}
	for _, f := range append([]string{".gitattributes"}, gittest.Files...) {
		require.Equal(t, " M", got[f], "%s is the branch's file, changed: %v", f, changes)
	}
	require.Equal(t, "??", got["new.txt"])
	require.NotContains(t, got, "decoy.txt", "core.worktree of the agent's gitdir redirects nothing")

	commit, err := git.CommitAll(ctx, dir, wt, "jam: archive")
	require.NoError(t, err)
	require.Equal(t, commit, run(t, dir, "rev-parse", "refs/heads/jam/s"), "the commit is on the session's branch")
	require.Equal(t, "changed a.txt", run(t, dir, "show", commit+":a.txt"), "committed as written: no clean filter")

	require.NoError(t, git.WorktreeRemove(ctx, dir, wt, true))
	require.NoDirExists(t, wt)
	require.NoError(t, git.WorktreePrune(ctx, dir))
	require.NoError(t, git.WorktreeAdd(ctx, dir, wt, "jam/s"))
	require.FileExists(t, filepath.Join(wt, ".evil", "config"), "the agent's files came back, but")
	changes, err = git.Status(ctx, dir, wt)
	require.NoError(t, err)
	require.Empty(t, changes, "checked out as committed: no smudge filter")
	require.NoError(t, git.WorktreeRemove(ctx, dir, wt, false))
	exists, err := git.BranchExists(ctx, dir, "jam/s")
	require.NoError(t, err)
	require.True(t, exists)
	require.NoError(t, git.BranchDelete(ctx, dir, "jam/s"))
	_, err = git.Head(ctx, dir)
	require.NoError(t, err)

	// A change set's calls, over the planted files the archive commit
	// changed: the one-pass diff (no diff driver, textconv or external
	// diff runs) and the blob stream (objects read raw).
	var patch strings.Builder
	raw, stats, err := git.Diff(ctx, dir, commit+"^", commit, &patch)
	require.NoError(t, err)
	require.NotEmpty(t, raw)
	require.Len(t, stats, len(raw))
	require.Contains(t, patch.String(), "+changed a.txt")
	var ids []string
	for _, e := range raw {
		if strings.Trim(e.NewID, "0") != "" && e.NewMode != 0o160000 { // a submodule's commit is not here
			ids = append(ids, e.NewID)
		}
	}
	require.NoError(t, git.CatBlobs(ctx, dir, ids, func(git.Blob, io.Reader) error { return nil }))

	// Diffs jam does not make today would not run drivers either: an
	// override to empty makes git refuse, not run.
	write(t, dir, "a.txt", "edited\n")
	_, _ = git.Run(ctx, dir, "diff", "HEAD")
	_, _ = git.Run(ctx, dir, "log", "-p", "-1")

	require.Empty(t, gittest.Fired(t, markers), "a planted program ran as jam")

	// The planting is live: the person's own git runs it (and fails on
	// the planted process filter).
	out, _ := exec.Command("git", "-C", dir, "status").CombinedOutput()
	require.NotEmpty(t, gittest.Fired(t, markers), "plain git status runs the planted programs: %s", out)
}

// TestPin: a worktree is found from the repository's records, whatever
// its own .git file says; a path that is no worktree of the repository is
// jam.ErrNotFound, and the repository's own working tree is not removed.
func TestPin(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)
	other := repo(t)
	root := t.TempDir()
	wt := filepath.Join(root, "session")
	require.NoError(t, git.WorktreeAddBranch(ctx, dir, wt, "jam/s"))
	write(t, wt, "NOTES.md", "x\n")

	// The .git file points at another repository's worktree: status still
	// reads this one.
	otherWT := filepath.Join(t.TempDir(), "other")
	require.NoError(t, git.WorktreeAddBranch(ctx, other, otherWT, "jam/o"))
	b, err := os.ReadFile(filepath.Join(otherWT, ".git"))
	require.NoError(t, err)
	write(t, wt, ".git", string(b))
	changes, err := git.Status(ctx, dir, wt)
	require.NoError(t, err)
	require.Equal(t, []git.Change{{XY: "??", Path: "NOTES.md"}}, changes)

	// Without a .git file at all (git's discovery would go on upwards).
	require.NoError(t, os.Remove(filepath.Join(wt, ".git")))
	changes, err = git.Status(ctx, dir, wt)
	require.NoError(t, err)
	require.Equal(t, []git.Change{{XY: "??", Path: "NOTES.md"}}, changes)

	// Through a symbolic link to it, and with the record written relative
	// (as git worktree add --relative-paths does).
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(wt, link))
	changes, err = git.Status(ctx, dir, link)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	common := run(t, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	record := filepath.Join(common, "worktrees", "session", "gitdir")
	realWT, err := filepath.EvalSymlinks(wt)
	require.NoError(t, err)
	rel, err := filepath.Rel(filepath.Dir(record), filepath.Join(realWT, ".git"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(record, []byte(rel+"\n"), 0o644))
	changes, err = git.Status(ctx, dir, wt)
	require.NoError(t, err)
	require.Len(t, changes, 1)

	// Not a worktree of this repository (another's, a plain directory,
	// nothing), and the repository's own working tree.
	for _, path := range []string{otherWT, t.TempDir(), filepath.Join(root, "gone")} {
		_, err = git.Status(ctx, dir, path)
		gitError(t, err, jam.ErrNotFound, "is not a working tree")
		err = git.WorktreeRemove(ctx, dir, path, true)
		gitError(t, err, jam.ErrNotFound, "is not a working tree")
	}
	require.DirExists(t, otherWT)
	_, err = git.Status(ctx, t.TempDir(), wt)
	gitError(t, err, jam.ErrInvalid, "not a git repository")
	err = git.WorktreeRemove(ctx, dir, dir, true)
	gitError(t, err, jam.ErrInvalid, "main working tree")
	require.FileExists(t, filepath.Join(dir, "README"))

	// Removed: the directory and the record, the branch kept.
	require.NoError(t, git.WorktreeRemove(ctx, dir, wt, true))
	require.NoDirExists(t, wt)
	require.NoDirExists(t, filepath.Dir(record))
	require.NotContains(t, run(t, dir, "worktree", "list", "--porcelain"), "session")
	exists, err := git.BranchExists(ctx, dir, "jam/s")
	require.NoError(t, err)
	require.True(t, exists)
}
