package git_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/git/gittest"
)

// credentials are the canaries a snapshot must never hold.
var credentials = []string{".env", "app/.env.local", "a/b/id_rsa", "keys/x.pem"}

// tree reads every file under dir but the .git entry, as path → mode and
// the SHA-256 of its bytes (a symlink's target).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, path)
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Lstat(path)
		require.NoError(t, err)
		var b []byte
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			require.NoError(t, err)
			b = []byte(target)
		} else {
			b, err = os.ReadFile(path)
			require.NoError(t, err)
		}
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	}))
	return out
}

// fill writes the kinds of file a snapshot must carry, ignored ones and
// credential canaries into dir.
func fill(t *testing.T, dir string) {
	t.Helper()
	write(t, dir, "README", "hello, edited\n")
	write(t, dir, "new dir/ünïcode name.txt", "untracked\n")
	write(t, dir, "empty", "")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin.dat"), []byte{0, 1, 2, 0xff, 0}, 0o644))
	write(t, dir, "run.sh", "#!/bin/sh\n")
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("README", filepath.Join(dir, "link")))
	write(t, dir, ".gitignore", "build/\n")
	write(t, dir, "build/out.o", "ignored\n")
	for _, c := range credentials {
		write(t, dir, c, "SECRET-CANARY\n")
	}
}

func without(m map[string]string, drop ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		keep := true
		for _, d := range drop {
			if k == d || strings.HasPrefix(k, d) {
				keep = false
			}
		}
		if keep {
			out[k] = v
		}
	}
	return out
}

var snapshotExcludes = []string{".env*", "id_rsa*", "*.pem"}

// TestSnapshot_repository: a snapshot of a linked worktree holds its
// untracked files, leaves out ignored and credential files, changes
// nothing of the person's (index, HEAD, branches, status), and restoring
// it after the worktree was removed, with the repository's HEAD moved on,
// gives the same files byte for byte.
func TestSnapshot_repository(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := repo(t)
	wt := filepath.Join(t.TempDir(), "wt one")
	require.NoError(t, git.WorktreeAddBranch(ctx, r, wt, "jam/s1"))
	fill(t, wt)
	gitDir := strings.TrimSpace(run(t, wt, "rev-parse", "--git-dir"))
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(wt, gitDir)
	}
	indexBefore, err := os.ReadFile(filepath.Join(gitDir, "index"))
	require.NoError(t, err)
	statusBefore := run(t, wt, "status", "--porcelain", "-z")
	refsBefore := run(t, r, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
	headBefore := run(t, wt, "rev-parse", "HEAD")

	snap, err := git.TakeSnapshot(ctx, git.SnapshotParams{Repo: r, Path: wt, Ref: "refs/jam/checkpoints/s1/1", Message: "jam checkpoint 1",
		Exclude: snapshotExcludes, At: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(headBefore), snap.Base)

	after, err := os.ReadFile(filepath.Join(gitDir, "index"))
	require.NoError(t, err)
	assert.Equal(t, indexBefore, after, "the worktree's index is untouched")
	assert.Equal(t, statusBefore, run(t, wt, "status", "--porcelain", "-z"))
	assert.Equal(t, refsBefore, run(t, r, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"))
	assert.Equal(t, headBefore, run(t, wt, "rev-parse", "HEAD"))

	names := strings.Split(strings.TrimRight(run(t, r, "ls-tree", "-r", "--name-only", "-z", snap.Commit), "\x00\n"), "\x00")
	assert.ElementsMatch(t, []string{"README", "new dir/ünïcode name.txt", "empty", "bin.dat", "run.sh", "link", ".gitignore"}, names)
	for _, c := range credentials {
		assert.NotContains(t, names, c)
	}
	assert.NotContains(t, run(t, r, "log", "-p", "--all", "--binary"), "SECRET-CANARY", "no commit holds a credential")

	want := without(tree(t, wt), "build/", ".env", "app/.env.local", "a/b/id_rsa", "keys/x.pem")
	// The worktree goes, its branch too, and the repository moves on.
	require.NoError(t, git.WorktreeRemove(ctx, r, wt, true))
	require.NoError(t, git.BranchDelete(ctx, r, "jam/s1"))
	write(t, r, "later.txt", "main moved on\n")
	run(t, r, "add", "later.txt")
	run(t, r, append(append([]string{}, person...), "commit", "-q", "-m", "later")...)

	require.NoError(t, git.RestoreSnapshot(ctx, git.RestoreParams{Repo: r, Path: wt, Branch: "jam/s1", Commit: snap.Commit, Base: snap.Base}))
	assert.Equal(t, want, tree(t, wt), "the restored files are the snapshot's, byte for byte")
	assert.Equal(t, snap.Base, strings.TrimSpace(run(t, wt, "rev-parse", "HEAD")), "the branch is at the snapshot's base, not the repository's HEAD")
	status := run(t, wt, "status", "--porcelain", "-z")
	assert.Contains(t, status, "?? new dir/\x00", "an untracked file comes back untracked")
	assert.Contains(t, status, "M README\x00", "a tracked file's edit comes back as an edit")

	_, err = git.TakeSnapshot(ctx, git.SnapshotParams{Repo: r, Path: wt, Ref: "refs/jam/checkpoints/s1/1", Message: "again", At: time.Now()})
	require.Error(t, err, "a ref that exists is never moved")
}

// TestSnapshot_private: a directory without a repository is snapshotted
// into a private git directory and restored from it.
func TestSnapshot_private(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	emptyRepo(t) // skips without git
	dir := filepath.Join(t.TempDir(), "plain dir")
	require.NoError(t, os.Mkdir(dir, 0o755))
	fill(t, dir)
	private := filepath.Join(t.TempDir(), "s1.git")
	var snaps []git.Snapshot
	for i := range 2 {
		write(t, dir, "count", strings.Repeat("x", i+1))
		snap, err := git.TakeSnapshot(ctx, git.SnapshotParams{GitDir: private, Path: dir, Ref: "refs/jam/checkpoints/s1/" + string(rune('1'+i)), Message: "checkpoint",
			Exclude: snapshotExcludes, At: time.Now()})
		require.NoError(t, err)
		snaps = append(snaps, snap)
	}
	assert.Equal(t, snaps[0].Commit, snaps[1].Base, "a private directory's snapshots chain")
	want := without(tree(t, dir), "build/", ".env", "app/.env.local", "a/b/id_rsa", "keys/x.pem")
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, git.RestoreSnapshot(ctx, git.RestoreParams{GitDir: private, Path: dir, Commit: snaps[1].Commit, Base: snaps[1].Base}))
	got := tree(t, dir)
	assert.Equal(t, want, got)
	_, err := os.Stat(filepath.Join(dir, ".git"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "the private git directory stays outside the directory")
}

// TestSnapshot_privateWithoutExclusions: the first snapshot into a new
// private git directory (no commit yet, so no parent) with nothing
// excluded records every file.
func TestSnapshot_privateWithoutExclusions(t *testing.T) {
	t.Parallel()
	emptyRepo(t) // skips without git
	dir := t.TempDir()
	write(t, dir, "a.txt", "a\n")
	write(t, dir, "sub/b.txt", "b\n")
	snap, err := git.TakeSnapshot(t.Context(), git.SnapshotParams{GitDir: filepath.Join(t.TempDir(), "p.git"), Path: dir,
		Ref: "refs/jam/checkpoints/p/1", Message: "checkpoint", At: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	require.NoError(t, err)
	assert.Empty(t, snap.Base)
	assert.Equal(t, "a.txt\nsub/b.txt", run(t, snap.GitDir, "ls-tree", "-r", "--name-only", snap.Commit))
}

func TestExcludePathspecs(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "/", "a\x00b", "a\nb"} {
		_, _, err := git.ExcludePathspecs([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
	ex, in, err := git.ExcludePathspecs([]string{".env*", "/top.key"})
	require.NoError(t, err)
	assert.NotEmpty(t, ex)
	assert.NotEmpty(t, in)
}

// TestSnapshot_hostile: taking and restoring a snapshot of a worktree
// whose repository and worktree plant every program git can be made to run
// runs none of them.
func TestSnapshot_hostile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := repo(t)
	markers := t.TempDir()
	gittest.PlantRepo(t, dir, markers)
	wt := filepath.Join(t.TempDir(), "session")
	require.NoError(t, git.WorktreeAddBranch(ctx, dir, wt, "jam/s"))
	gittest.PlantWorktree(t, wt, markers)
	snap, err := git.TakeSnapshot(ctx, git.SnapshotParams{Repo: dir, Path: wt, Ref: "refs/jam/checkpoints/s/1", Message: "checkpoint", Exclude: snapshotExcludes, At: time.Now()})
	require.NoError(t, err)
	require.NoError(t, git.WorktreeRemove(ctx, dir, wt, true))
	require.NoError(t, git.BranchDelete(ctx, dir, "jam/s"))
	require.NoError(t, git.RestoreSnapshot(ctx, git.RestoreParams{Repo: dir, Path: wt, Branch: "jam/s", Commit: snap.Commit, Base: snap.Base}))
	require.Empty(t, gittest.Fired(t, markers), "planted programs ran")
}
