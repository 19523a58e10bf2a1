package git_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
)

// deliveryBundle is a repository with a linked worktree and two
// checkpoints of it: from (the worktree clean, so its tree is the base
// commit's) and to (every kind of change made).
type deliveryBundle struct {
	repo, wt, gitDir string
	base, from, to   string
}

// renamed is long enough for git's rename detection to pair it.
const renamed = "line one of a file that moves\nline two\nline three\nline four\nline five\n"

func deliverySetup(t *testing.T) deliveryBundle {
	t.Helper()
	ctx := t.Context()
	r := repo(t)
	write(t, r, "mod.txt", "a\nb\nc\n")
	write(t, r, "del.txt", "going\n")
	write(t, r, "old.txt", renamed)
	write(t, r, "tool.sh", "#!/bin/sh\necho hi\n")
	require.NoError(t, os.WriteFile(filepath.Join(r, "img.bin"), []byte{0, 1, 2, 3, 0xfe, 0xff}, 0o644))
	require.NoError(t, os.Symlink("mod.txt", filepath.Join(r, "link")))
	run(t, r, "add", "--all")
	run(t, r, append(append([]string{}, person...), "commit", "-q", "-m", "files")...)

	wt := filepath.Join(t.TempDir(), "wt one")
	require.NoError(t, git.WorktreeAddBranch(ctx, r, wt, "jam/s1"))
	at := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	from, err := git.TakeSnapshot(ctx, git.SnapshotParams{Repo: r, Path: wt, Ref: "refs/jam/checkpoints/s1/1", Message: "checkpoint 1", At: at})
	require.NoError(t, err)

	write(t, wt, "mod.txt", "a\nB\nc\nd\n")
	require.NoError(t, os.Remove(filepath.Join(wt, "del.txt")))
	require.NoError(t, os.Remove(filepath.Join(wt, "old.txt")))
	write(t, wt, "new dir/moved name.txt", renamed)
	require.NoError(t, os.Chmod(filepath.Join(wt, "tool.sh"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "img.bin"), []byte{9, 0, 8, 0, 7, 0xff, 0xfe}, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "added.bin"), bytes.Repeat([]byte{0, 0xaa}, 300), 0o644))
	require.NoError(t, os.Remove(filepath.Join(wt, "link")))
	require.NoError(t, os.Symlink("new dir/moved name.txt", filepath.Join(wt, "link")))
	write(t, wt, "added.txt", "brand new\n")
	to, err := git.TakeSnapshot(ctx, git.SnapshotParams{Repo: r, Path: wt, Ref: "refs/jam/checkpoints/s1/2", Message: "checkpoint 2", At: at.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, from.Base, to.Base)
	require.Equal(t, run(t, r, "rev-parse", from.Base+"^{tree}"), from.Tree, "the first checkpoint holds the base's tree")
	return deliveryBundle{repo: r, wt: wt, gitDir: from.GitDir, base: from.Base, from: from.Commit, to: to.Commit}
}

func (b deliveryBundle) params() git.DeliveryCommitParams {
	return git.DeliveryCommitParams{
		GitDir: b.gitDir, Parent: b.base, From: b.from, To: b.to,
		Message:  "Turn result\n\nWhat the agent did.\n",
		Trailers: [][2]string{{"Jam-Session", "sess_01"}, {"Jam-Turn", "turn_02"}, {"Jam-Change-Set", "cs_03"}},
		Name:     "jam", Email: "jam@example.com",
		At: time.Date(2026, 12, 3, 8, 0, 0, 0, time.FixedZone("X", 3600)),
	}
}

// liveState is what a delivery must leave alone: the worktree's files,
// status and index, and every ref and HEAD.
func liveState(t *testing.T, b deliveryBundle) []string {
	t.Helper()
	gitDir := run(t, b.wt, "rev-parse", "--absolute-git-dir")
	index, err := os.ReadFile(filepath.Join(gitDir, "index"))
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(gitDir, "index"))
	require.NoError(t, err)
	var files []string
	for k, v := range tree(t, b.wt) {
		files = append(files, k+" "+v)
	}
	sort.Strings(files)
	return []string{
		string(index), fi.ModTime().String(),
		run(t, b.wt, "status", "--porcelain", "-z"),
		run(t, b.repo, "for-each-ref", "--format=%(refname) %(objectname)"),
		run(t, b.repo, "rev-parse", "HEAD"), run(t, b.wt, "rev-parse", "HEAD"),
		run(t, b.repo, "status", "--porcelain", "-z"),
		strings.Join(files, "\n"),
	}
}

func TestBuildDeliveryCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := deliverySetup(t)
	before := liveState(t, b)

	commit, tree, err := git.BuildDeliveryCommit(ctx, b.params())
	require.NoError(t, err)
	assert.Regexp(t, commitID, commit)
	assert.Equal(t, run(t, b.repo, "rev-parse", b.to+"^{tree}"), tree, "onto the From tree, the result is To's tree")
	assert.Equal(t, tree, run(t, b.repo, "rev-parse", commit+"^{tree}"))
	assert.Equal(t, b.base, run(t, b.repo, "rev-parse", commit+"^"), "its one parent is Parent")
	assert.Equal(t, before, liveState(t, b), "the worktree, its index, HEAD and every ref are untouched")

	again, _, err := git.BuildDeliveryCommit(ctx, b.params())
	require.NoError(t, err)
	assert.Equal(t, commit, again, "the same parameters build the same commit")
	p := b.params()
	p.At = p.At.UTC()
	again, _, err = git.BuildDeliveryCommit(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, commit, again, "the date is recorded in UTC, so a time read back from the store builds the same commit")

	msg := run(t, b.repo, "cat-file", "commit", commit)
	unix := strconv.FormatInt(b.params().At.Unix(), 10)
	assert.Contains(t, msg, "\nauthor jam <jam@example.com> "+unix+" +0000\n")
	assert.Contains(t, msg, "\ncommitter jam <jam@example.com> "+unix+" +0000\n")
	cmd := exec.Command("git", "-C", b.repo, "interpret-trailers", "--parse")
	cmd.Stdin = strings.NewReader(run(t, b.repo, "log", "-1", "--format=%B", commit))
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "Jam-Session: sess_01\nJam-Turn: turn_02\nJam-Change-Set: cs_03\n", string(out))
	assert.True(t, strings.HasPrefix(run(t, b.repo, "log", "-1", "--format=%B", commit), "Turn result\n\nWhat the agent did.\n\nJam-Session"))

	// Onto a parent that moved on elsewhere, the change still applies.
	write(t, b.repo, "elsewhere.txt", "other work\n")
	run(t, b.repo, "add", "elsewhere.txt")
	run(t, b.repo, append(append([]string{}, person...), "commit", "-q", "-m", "other work")...)
	p = b.params()
	p.Parent = run(t, b.repo, "rev-parse", "HEAD")
	moved, _, err := git.BuildDeliveryCommit(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "other work\n", run(t, b.repo, "show", moved+":elsewhere.txt")+"\n")
	assert.Equal(t, "", run(t, b.repo, "diff", "--stat", b.to, moved, "--", ".", ":!elsewhere.txt"), "the change is the change set's")
}

func TestBuildDeliveryCommit_conflict(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := deliverySetup(t)
	write(t, b.repo, "mod.txt", "x\ny\nz\n")
	write(t, b.repo, "added.txt", "already here\n")
	run(t, b.repo, "add", "--all")
	run(t, b.repo, append(append([]string{}, person...), "commit", "-q", "-m", "conflicting")...)
	refs := run(t, b.repo, "for-each-ref")
	p := b.params()
	p.Parent = run(t, b.repo, "rev-parse", "HEAD")
	_, _, err := git.BuildDeliveryCommit(ctx, p)
	require.ErrorIs(t, err, jam.ErrConflict)
	var pc *git.PatchConflictError
	require.ErrorAs(t, err, &pc)
	assert.Subset(t, pc.Paths, []string{"mod.txt"}, "the refusal names the path: %v", err)
	assert.Contains(t, err.Error(), "mod.txt")
	assert.Equal(t, refs, run(t, b.repo, "for-each-ref"), "a failed build moves nothing")
}

func TestBuildDeliveryCommit_equalTrees(t *testing.T) {
	t.Parallel()
	b := deliverySetup(t)
	p := b.params()
	p.To = p.From
	commit, tree, err := git.BuildDeliveryCommit(t.Context(), p)
	require.NoError(t, err)
	assert.Equal(t, run(t, b.repo, "rev-parse", b.base+"^{tree}"), tree)
	assert.Equal(t, b.base, run(t, b.repo, "rev-parse", commit+"^"))
}

func TestBuildDeliveryCommit_invalid(t *testing.T) {
	t.Parallel()
	b := deliverySetup(t)
	for name, tc := range map[string]struct {
		edit func(*git.DeliveryCommitParams)
		kind error
	}{
		"no message":      {func(p *git.DeliveryCommitParams) { p.Message = " \n" }, jam.ErrInvalid},
		"bad trailer key": {func(p *git.DeliveryCommitParams) { p.Trailers = [][2]string{{"Bad Key", "v"}} }, jam.ErrInvalid},
		"two-line value":  {func(p *git.DeliveryCommitParams) { p.Trailers = [][2]string{{"K", "a\nb"}} }, jam.ErrInvalid},
		"bad email":       {func(p *git.DeliveryCommitParams) { p.Email = "a<b" }, jam.ErrInvalid},
		"no date":         {func(p *git.DeliveryCommitParams) { p.At = time.Time{} }, jam.ErrInvalid},
		"relative dir":    {func(p *git.DeliveryCommitParams) { p.GitDir = "repo/.git" }, jam.ErrInvalid},
		"option parent":   {func(p *git.DeliveryCommitParams) { p.Parent = "--all" }, jam.ErrInvalid},
		"unknown to":      {func(p *git.DeliveryCommitParams) { p.To = strings.Repeat("1", 40) }, jam.ErrNotFound},
		"missing dir":     {func(p *git.DeliveryCommitParams) { p.GitDir = filepath.Join(t.TempDir(), "nope") }, jam.ErrNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := b.params()
			tc.edit(&p)
			_, _, err := git.BuildDeliveryCommit(t.Context(), p)
			require.ErrorIs(t, err, tc.kind)
		})
	}
}

func TestDeliveryMessage(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		msg      string
		trailers [][2]string
		want     string
	}{
		"subject only":  {"Subject", nil, "Subject\n"},
		"trailing junk": {"Subject\n\nBody\n\n\n  ", [][2]string{{"A", "1"}}, "Subject\n\nBody\n\nA: 1\n"},
		"two trailers":  {"S", [][2]string{{"Jam-Turn", " turn_1 "}, {"Jam-Session", "sess_1"}}, "S\n\nJam-Turn: turn_1\nJam-Session: sess_1\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := git.DeliveryMessage(tc.msg, tc.trailers)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestApplyConflictPaths(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		stderr string
		want   []string
	}{
		"context":    {"error: patch failed: mod.txt:1\nerror: mod.txt: patch does not apply", []string{"mod.txt"}},
		"exists":     {"error: added.txt: already exists in index\n", []string{"added.txt"}},
		"missing":    {"error: old name.txt: does not exist in index", []string{"old name.txt"}},
		"binary":     {"error: the patch applies to 'img.bin' (0123abc), which does not match the current contents.\nerror: img.bin: patch does not apply", []string{"img.bin"}},
		"two":        {"error: a: does not exist in index\nerror: b: already exists in index\nerror: a: patch does not apply", []string{"a", "b"}},
		"no path":    {"fatal: corrupt patch at line 3", nil},
		"empty text": {"", nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, git.ApplyConflictPaths(tc.stderr))
		})
	}
}

func FuzzApplyConflictPaths(f *testing.F) {
	f.Add("error: patch failed: mod.txt:1\nerror: mod.txt: patch does not apply")
	f.Add("error: x: already exists in index\r\nerror: : does not exist in index")
	f.Fuzz(func(t *testing.T, s string) {
		paths := git.ApplyConflictPaths(s)
		seen := map[string]bool{}
		for _, p := range paths {
			if p == "" || seen[p] || strings.Contains(p, "\n") || !strings.Contains(s, p) {
				t.Fatalf("bad path %q of %q", p, s)
			}
			seen[p] = true
		}
	})
}

func TestListTree(t *testing.T) {
	t.Parallel()
	b := deliverySetup(t)
	got := map[string]git.TreeEntry{}
	require.NoError(t, git.ListTree(t.Context(), b.gitDir, b.to, func(e git.TreeEntry) error {
		got[e.Path] = e
		return nil
	}))
	assert.Equal(t, uint32(0o100755), got["tool.sh"].Mode)
	assert.Equal(t, uint32(0o120000), got["link"].Mode)
	assert.Equal(t, "blob", got["new dir/moved name.txt"].Type)
	assert.NotContains(t, got, "del.txt")
	assert.Equal(t, run(t, b.repo, "rev-parse", b.to+":added.txt"), got["added.txt"].ID)

	stop := jam.ErrStopping
	n := 0
	err := git.ListTree(t.Context(), b.gitDir, b.to, func(git.TreeEntry) error { n++; return stop })
	require.ErrorIs(t, err, stop, "fn's error is returned")
	assert.Equal(t, 1, n)
	require.ErrorIs(t, git.ListTree(t.Context(), b.gitDir, strings.Repeat("2", 40), func(git.TreeEntry) error { return nil }), jam.ErrNotFound)
}

func TestParseTreeEntry(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("ab", 20)
	for name, tc := range map[string]struct {
		rec  string
		want git.TreeEntry
		ok   bool
	}{
		"blob":      {"100644 blob " + id + "\ta b/c.txt", git.TreeEntry{Mode: 0o100644, Type: "blob", ID: id, Path: "a b/c.txt"}, true},
		"exec":      {"100755 blob " + id + "\tx", git.TreeEntry{Mode: 0o100755, Type: "blob", ID: id, Path: "x"}, true},
		"gitlink":   {"160000 commit " + id + "\tsub", git.TreeEntry{Mode: 0o160000, Type: "commit", ID: id, Path: "sub"}, true},
		"tab path":  {"100644 blob " + id + "\ta\tb", git.TreeEntry{Mode: 0o100644, Type: "blob", ID: id, Path: "a\tb"}, true},
		"no path":   {"100644 blob " + id + "\t", git.TreeEntry{}, false},
		"no tab":    {"100644 blob " + id, git.TreeEntry{}, false},
		"bad mode":  {"10064x blob " + id + "\tx", git.TreeEntry{}, false},
		"short id":  {"100644 blob abc\tx", git.TreeEntry{}, false},
		"bad type":  {"100644 tag " + id + "\tx", git.TreeEntry{}, false},
		"two space": {"100644  blob " + id + "\tx", git.TreeEntry{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := git.ParseTreeEntry(tc.rec)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzParseTreeEntry(f *testing.F) {
	f.Add("100644 blob " + strings.Repeat("ab", 20) + "\tpath")
	f.Add("160000 commit " + strings.Repeat("0", 64) + "\ts")
	f.Fuzz(func(t *testing.T, rec string) {
		e, err := git.ParseTreeEntry(rec)
		if err != nil {
			return
		}
		if e.Path == "" || !strings.HasSuffix(rec, "\t"+e.Path) || !strings.Contains(rec, e.ID) {
			t.Fatalf("%q decoded as %+v", rec, e)
		}
	})
}
