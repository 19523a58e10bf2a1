package changeset_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/git"
	"github.com/stretchr/testify/require"
)

func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

var names = []string{"a.txt", "b c.txt", "dir/x.go", "dir/sub/ü nicode.md", "bin.dat", "empty", "d2/y", "tab\tname"}

func randomContent(r *rand.Rand) []byte {
	switch r.Intn(4) {
	case 0:
		return nil
	case 1:
		b := make([]byte, r.Intn(300))
		r.Read(b)
		return b
	default:
		var s strings.Builder
		for i := r.Intn(20); i >= 0; i-- {
			fmt.Fprintf(&s, "line %d %d\n", i, r.Intn(5))
		}
		return []byte(s.String())
	}
}

func write(t testing.TB, dir, name string, data []byte, r *rand.Rand) {
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	os.Remove(p)
	if r.Intn(8) == 0 {
		require.NoError(t, os.Symlink("target-"+fmt.Sprint(r.Intn(3)), p))
		return
	}
	mode := os.FileMode(0o644)
	if r.Intn(4) == 0 {
		mode = 0o755
	}
	require.NoError(t, os.WriteFile(p, data, mode))
	require.NoError(t, os.Chmod(p, mode))
}

// TestApplyReproduces: over generated trees, applying a captured patch
// to a checkout of the base reproduces every after-digest, and capturing
// again gives the same subject digest.
func TestApplyReproduces(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewSource(15))
	repo := t.TempDir()
	gitT(t, repo, "init", "-q")
	for c := 0; c < 200; c++ {
		for _, n := range names {
			if r.Intn(2) == 0 {
				write(t, repo, n, randomContent(r), r)
			}
		}
		gitT(t, repo, "add", "-A")
		gitT(t, repo, "commit", "-q", "--allow-empty", "-m", "base")
		base := gitT(t, repo, "rev-parse", "HEAD")
		// Change: edit, delete, rename, chmod.
		for _, n := range names {
			p := filepath.Join(repo, n)
			if _, err := os.Lstat(p); err != nil {
				if r.Intn(3) == 0 {
					write(t, repo, n, randomContent(r), r)
				}
				continue
			}
			switch r.Intn(6) {
			case 0:
				os.Remove(p)
			case 1:
				to := filepath.Join(repo, "moved", fmt.Sprintf("%d %s", c, filepath.Base(n)))
				require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
				require.NoError(t, os.Rename(p, to))
			case 2:
				write(t, repo, n, randomContent(r), r)
			case 3:
				if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
					require.NoError(t, os.Chmod(p, fi.Mode()^0o111))
				}
			}
		}
		gitT(t, repo, "add", "-A")
		gitT(t, repo, "commit", "-q", "--allow-empty", "-m", "end")
		end := gitT(t, repo, "rev-parse", "HEAD")

		cs, err := changeset.Capture(ctx, repo, base, end, changeset.Options{})
		require.NoError(t, err)
		again, err := changeset.Capture(ctx, repo, base, end, changeset.Options{})
		require.NoError(t, err)
		require.Equal(t, cs.SubjectDigest, again.SubjectDigest, "case %d", c)
		d, err := changeset.Digest(cs)
		require.NoError(t, err)
		require.Equal(t, cs.SubjectDigest, d)
		var patch bytes.Buffer
		require.NoError(t, git.DiffPatch(ctx, repo, base, end, &patch))
		require.Equal(t, patch.String(), string(cs.Patch), "case %d: the patch of the one pass is git diff's", c)

		work := t.TempDir()
		gitT(t, repo, "worktree", "add", "-q", "--detach", work, base)
		require.NoError(t, changeset.Apply(ctx, cs, work, true), "case %d", c)
		require.NoError(t, changeset.Apply(ctx, cs, work, false), "case %d", c)
		gitT(t, repo, "worktree", "remove", "--force", work)
		// Clean up moved files so the tree stays small.
		os.RemoveAll(filepath.Join(repo, "moved"))
	}
}

func TestEditThenRevertIsEmpty(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitT(t, repo, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "f"), []byte("one\n"), 0o644))
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "base")
	base := gitT(t, repo, "rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "f"), []byte("two\n"), 0o644))
	gitT(t, repo, "commit", "-q", "-am", "edit")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "f"), []byte("one\n"), 0o644))
	gitT(t, repo, "commit", "-q", "-am", "revert")
	cs, err := changeset.Capture(ctx, repo, base, "HEAD", changeset.Options{})
	require.NoError(t, err)
	require.True(t, cs.Empty())
	require.Empty(t, cs.Patch)
	require.Zero(t, cs.PatchBytes)
}

func TestOmittedPatch(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitT(t, repo, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "f"), []byte("one\n"), 0o644))
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "base")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "f"), []byte("two\n"), 0o644))
	gitT(t, repo, "commit", "-q", "-am", "edit")
	full, err := changeset.Capture(ctx, repo, "HEAD~1", "HEAD", changeset.Options{})
	require.NoError(t, err)
	cut, err := changeset.Capture(ctx, repo, "HEAD~1", "HEAD", changeset.Options{MaxPatchBytes: 10})
	require.NoError(t, err)
	require.True(t, cut.PatchOmitted)
	require.Nil(t, cut.Patch)
	require.Equal(t, full.PatchBytes, cut.PatchBytes)
	require.Equal(t, full.SubjectDigest, cut.SubjectDigest)
	err = changeset.Apply(ctx, cut, t.TempDir(), false)
	require.ErrorContains(t, err, "regenerate")
}
