package changeset_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// verifyBundle is a repository whose change set from base to end holds
// every kind of change, and the delivery commit built from it onto base.
type verifyBundle struct {
	repo, gitDir, base, end, delivered string
	cs                                 store.ChangeSet
}

const moving = "first line of the file that moves\nsecond\nthird\nfourth\nfifth\n"

func verifySetup(t *testing.T) verifyBundle {
	t.Helper()
	ctx := t.Context()
	repo := t.TempDir()
	gitT(t, repo, "init", "-q", "-b", "main")
	put := func(name string, data []byte, mode os.FileMode) {
		p := filepath.Join(repo, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	put("README", []byte("untouched\n"), 0o644)
	put("mod.txt", []byte("a\nb\nc\n"), 0o644)
	put("del.txt", []byte("going\n"), 0o644)
	put("old.txt", []byte(moving), 0o644)
	put("tool.sh", []byte("#!/bin/sh\n"), 0o644)
	put("img.bin", []byte{0, 1, 2, 0xff}, 0o644)
	require.NoError(t, os.Symlink("mod.txt", filepath.Join(repo, "link")))
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "base")
	base := gitT(t, repo, "rev-parse", "HEAD")

	put("mod.txt", []byte("a\nB\nc\n"), 0o644)
	require.NoError(t, os.Remove(filepath.Join(repo, "del.txt")))
	require.NoError(t, os.Remove(filepath.Join(repo, "old.txt")))
	put("new/moved.txt", []byte(moving), 0o644)
	put("tool.sh", []byte("#!/bin/sh\n"), 0o755)
	put("img.bin", []byte{9, 0, 8, 0xfe}, 0o644)
	put("added.bin", bytes.Repeat([]byte{0, 0xab}, 100), 0o644)
	require.NoError(t, os.Remove(filepath.Join(repo, "link")))
	require.NoError(t, os.Symlink("README", filepath.Join(repo, "link")))
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "end")
	end := gitT(t, repo, "rev-parse", "HEAD")

	gitDir := filepath.Join(repo, ".git")
	cs, err := changeset.Capture(ctx, gitDir, base, end, changeset.Options{})
	require.NoError(t, err)
	kinds := map[store.ChangeKind]bool{}
	for _, f := range cs.Files {
		kinds[f.Kind] = true
	}
	require.Len(t, kinds, 4, "added, modified, deleted and renamed: %+v", cs.Files)
	delivered, _, err := git.BuildDeliveryCommit(ctx, git.DeliveryCommitParams{
		GitDir: gitDir, Parent: base, From: base, To: end, Message: "deliver",
		Trailers: [][2]string{{"Jam-Change-Set", "cs_1"}}, Name: "jam", Email: "jam@example.com",
		At: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC),
	})
	require.NoError(t, err)
	return verifyBundle{repo: repo, gitDir: gitDir, base: base, end: end, delivered: delivered, cs: cs}
}

// tamper makes a commit of commit's tree changed by the update-index
// arguments edits, on parent ("" for a root commit), with the person's
// plain git.
func tamper(t *testing.T, b verifyBundle, commit, parent string, edits ...[]string) string {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	gitIdx := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", b.repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	gitIdx("", "read-tree", commit)
	for _, e := range edits {
		gitIdx("", append([]string{"update-index"}, e...)...)
	}
	tree := gitIdx("", "write-tree")
	args := []string{"commit-tree", tree, "-m", "tampered"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return gitIdx("", args...)
}

func blob(t *testing.T, b verifyBundle, content string) string {
	t.Helper()
	cmd := exec.Command("git", "-C", b.repo, "hash-object", "-w", "--stdin")
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func TestVerifyTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := verifySetup(t)
	require.NoError(t, changeset.VerifyTree(ctx, b.gitDir, b.delivered, b.cs), "the built commit holds the change set")
	require.NoError(t, changeset.VerifyTree(ctx, b.gitDir, b.end, b.cs), "and so does the end commit itself")

	// Onto a parent with other work, the check is against that parent.
	other := tamper(t, b, b.base, b.base, []string{"--add", "--cacheinfo", "100644," + blob(t, b, "other\n") + ",elsewhere.txt"})
	onOther, _, err := git.BuildDeliveryCommit(ctx, git.DeliveryCommitParams{
		GitDir: b.gitDir, Parent: other, From: b.base, To: b.end, Message: "deliver", Name: "jam", Email: "j@x",
		At: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC),
	})
	require.NoError(t, err)
	require.NoError(t, changeset.VerifyTree(ctx, b.gitDir, onOther, b.cs))

	evil := blob(t, b, "tampered\n")
	for name, tc := range map[string]struct {
		edits  [][]string
		parent string
		path   string
	}{
		"tampered blob":    {[][]string{{"--cacheinfo", "100644," + evil + ",mod.txt"}}, b.base, "mod.txt"},
		"tampered binary":  {[][]string{{"--cacheinfo", "100644," + evil + ",added.bin"}}, b.base, "added.bin"},
		"tampered mode":    {[][]string{{"--chmod=-x", "tool.sh"}}, b.base, "tool.sh"},
		"link to file":     {[][]string{{"--cacheinfo", "100644," + blob(t, b, "README") + ",link"}}, b.base, "link"},
		"extra file":       {[][]string{{"--add", "--cacheinfo", "100644," + evil + ",extra.txt"}}, b.base, "extra.txt"},
		"untouched edited": {[][]string{{"--cacheinfo", "100644," + evil + ",README"}}, b.base, "README"},
		"deleted is back":  {[][]string{{"--add", "--cacheinfo", "100644," + evil + ",del.txt"}}, b.base, "del.txt"},
		"rename source":    {[][]string{{"--add", "--cacheinfo", "100644," + evil + ",old.txt"}}, b.base, "old.txt"},
		"missing":          {[][]string{{"--force-remove", "new/moved.txt"}}, b.base, "new/moved.txt"},
		"root commit":      {nil, "", "README"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bad := tamper(t, b, b.delivered, tc.parent, tc.edits...)
			err := changeset.VerifyTree(ctx, b.gitDir, bad, b.cs)
			require.ErrorIs(t, err, jam.ErrConflict)
			assert.Contains(t, err.Error(), `"`+tc.path+`"`)
		})
	}

	require.ErrorIs(t, changeset.VerifyTree(ctx, b.gitDir, strings.Repeat("4", 40), b.cs), jam.ErrNotFound)
}
