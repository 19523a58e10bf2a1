package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/jam"
)

// gitCmd runs git in dir with a fixed identity and no configuration of
// the machine's.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "core.autocrlf=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, dir, name string, data []byte, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, mode))
	require.NoError(t, os.Chmod(p, mode))
}

// applyFixture is a repository with a base commit and an end commit that
// modifies a text file, sets an exec bit, renames, deletes, changes and
// adds binary files and adds a symbolic link; its change set is captured
// by the real capture, so the patch is git's own.
type applyFixture struct {
	repo, base, end string
	cs              wire.ChangeSet
	patch           []byte
}

func newApplyFixture(t *testing.T) *applyFixture {
	t.Helper()
	repo := t.TempDir()
	gitCmd(t, repo, "init", "-q")
	writeFile(t, repo, "mod.txt", []byte("one\ntwo\nthree\n"), 0o644)
	writeFile(t, repo, "run.sh", []byte("#!/bin/sh\necho hi\n"), 0o644)
	writeFile(t, repo, "old.txt", []byte("alpha\nbeta\ngamma\ndelta\nepsilon\n"), 0o644)
	writeFile(t, repo, "gone.txt", []byte("bye\n"), 0o644)
	writeFile(t, repo, "logo.bin", []byte("\x89PNG\x00\x01\x02\xff\xfe"), 0o644)
	writeFile(t, repo, "keep/keep.txt", []byte("keep\n"), 0o644)
	gitCmd(t, repo, "add", "-A")
	gitCmd(t, repo, "commit", "-qm", "base")
	base := gitCmd(t, repo, "rev-parse", "HEAD")
	writeFile(t, repo, "mod.txt", []byte("one\n2\nthree\nfour\n"), 0o644)
	require.NoError(t, os.Chmod(filepath.Join(repo, "run.sh"), 0o755))
	gitCmd(t, repo, "mv", "old.txt", "new name.txt")
	writeFile(t, repo, "new name.txt", []byte("alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\n"), 0o644)
	gitCmd(t, repo, "rm", "-q", "gone.txt")
	writeFile(t, repo, "logo.bin", []byte("\x89PNG\x00\x03\x04\xff\xfe\x00"), 0o644)
	writeFile(t, repo, "added.bin", []byte{0, 1, 2, 3, 0xff, 0}, 0o644)
	require.NoError(t, os.Symlink("keep/keep.txt", filepath.Join(repo, "link")))
	gitCmd(t, repo, "add", "-A")
	gitCmd(t, repo, "commit", "-qm", "end")
	end := gitCmd(t, repo, "rev-parse", "HEAD")
	got, err := changeset.Capture(t.Context(), filepath.Join(repo, ".git"), base, end, changeset.Options{})
	require.NoError(t, err)
	cs := wire.ChangeSet{ID: "cs_1", Session: "sess_1", Origin: "request", BaseCheckpoint: "snap_1", EndCheckpoint: "snap_2",
		BaseCommit: got.BaseCommit, EndCommit: got.EndCommit, Additions: got.Additions, Deletions: got.Deletions,
		PatchBytes: got.PatchBytes, SubjectDigest: got.SubjectDigest, Created: created}
	mode := func(m uint32) string {
		if m == 0 {
			return ""
		}
		return fmt.Sprintf("%06o", m)
	}
	for _, f := range got.Files {
		cs.Files = append(cs.Files, wire.ChangeSetFile{Path: f.Path, OldPath: f.OldPath, Kind: string(f.Kind), OldMode: mode(f.OldMode), NewMode: mode(f.NewMode),
			OldSHA256: f.OldSHA256, NewSHA256: f.NewSHA256, Size: f.Size, Binary: f.Binary, Symlink: f.Symlink, Additions: f.Additions, Deletions: f.Deletions})
	}
	kinds := map[string]string{}
	for _, f := range cs.Files {
		kinds[f.Path] = f.Kind
	}
	require.Equal(t, map[string]string{"mod.txt": "modified", "run.sh": "modified", "new name.txt": "renamed", "gone.txt": "deleted",
		"logo.bin": "modified", "added.bin": "added", "link": "added"}, kinds, "the end commit makes every kind of change")
	return &applyFixture{repo: repo, base: base, end: end, cs: cs, patch: got.Patch}
}

// results serves cs and patch as cs_1; every other id is not found.
func (f *applyFixture) results(cs wire.ChangeSet, patch []byte) backend {
	return backend{Results: apitest.Results{
		ChangeSetFunc: func(_ context.Context, id string) (wire.ChangeSet, error) {
			if id != cs.ID {
				return wire.ChangeSet{}, fmt.Errorf("change set %s: %w", id, jam.ErrNotFound)
			}
			return cs, nil
		},
		ChangeSetPatchFunc: func(_ context.Context, id string) ([]byte, error) {
			if id != cs.ID {
				return nil, jam.ErrNotFound
			}
			return patch, nil
		},
	}}
}

// checkout is a clone of the fixture at its base commit: the top of a git
// work tree, or with plain a directory in none.
func (f *applyFixture) checkout(t *testing.T, plain bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	gitCmd(t, f.repo, "clone", "-q", "--no-checkout", f.repo, dir)
	gitCmd(t, dir, "checkout", "-q", f.base)
	if plain {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, ".git")))
	}
	return dir
}

// tree is every file under dir but .git: mode and content (a link's
// target).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var data []byte
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			data = []byte("-> " + target)
		} else if data, err = os.ReadFile(p); err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = fmt.Sprintf("%v %x", fi.Mode(), data)
		return nil
	}))
	return out
}

func TestChangeSetApply(t *testing.T) {
	t.Parallel()
	f := newApplyFixture(t)
	// The tree the end commit holds, as a checkout of it shows it.
	wantTree := func(t *testing.T) map[string]string {
		dir := filepath.Join(t.TempDir(), "end")
		gitCmd(t, f.repo, "clone", "-q", "--no-checkout", f.repo, dir)
		gitCmd(t, dir, "checkout", "-q", f.end)
		return tree(t, dir)
	}
	summary := fmt.Sprintf("7 files, +%d −%d", f.cs.Additions, f.cs.Deletions)

	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			dir := f.checkout(t, plain)
			r := setup(t, f.results(f.cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", dir)
			require.Equal(t, "", r.stderr)
			require.Equal(t, 0, r.code)
			assert.Equal(t, "applied cs_1 to "+dir+": "+summary+"\n", r.stdout)
			assert.Equal(t, wantTree(t), tree(t, dir), "the directory holds the end commit's files")
			fi, err := os.Stat(filepath.Join(dir, "run.sh"))
			require.NoError(t, err)
			assert.NotZero(t, fi.Mode()&0o100, "the exec bit is set")
			_, err = os.Lstat(filepath.Join(dir, "old.txt"))
			assert.ErrorIs(t, err, fs.ErrNotExist, "the rename's old path is gone")
			_, err = os.Lstat(filepath.Join(dir, "gone.txt"))
			assert.ErrorIs(t, err, fs.ErrNotExist, "the deleted file is gone")
			if !plain {
				assert.Empty(t, gitCmd(t, dir, "diff", "--cached", "--name-only"), "the index is not touched")
			}
		})
	}

	t.Run("check changes nothing", func(t *testing.T) {
		t.Parallel()
		dir := f.checkout(t, false)
		before := tree(t, dir)
		r := setup(t, f.results(f.cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", dir, "--check")
		require.Equal(t, "", r.stderr)
		require.Equal(t, 0, r.code)
		assert.Equal(t, "cs_1 applies to "+dir+": "+summary+"\n", r.stdout)
		assert.Equal(t, before, tree(t, dir))
	})

	t.Run("json", func(t *testing.T) {
		t.Parallel()
		dir := f.checkout(t, true)
		r := setup(t, f.results(f.cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", dir, "--json")
		require.Equal(t, "", r.stderr)
		require.Equal(t, 0, r.code)
		assert.JSONEq(t, fmt.Sprintf(`{"changeset":"cs_1","dir":%q,"check":false,"files":7,"additions":%d,"deletions":%d}`, dir, f.cs.Additions, f.cs.Deletions), r.stdout)
	})

	// A tree where mod.txt is not the base's: the patch does not apply, and
	// neither --check nor a real apply changes a file.
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("conflict check=%v", check), func(t *testing.T) {
			t.Parallel()
			dir := f.checkout(t, false)
			writeFile(t, dir, "mod.txt", []byte("someone else's\nedit\n"), 0o644)
			before := tree(t, dir)
			args := []string{"changeset", "apply", "cs_1", "--to", dir}
			if check {
				args = append(args, "--check")
			}
			r := setup(t, f.results(f.cs, f.patch)).jam(t, args...)
			assert.Equal(t, 5, r.code, "conflict")
			assert.Contains(t, r.stderr, "jam: change set cs_1 does not apply to "+dir+" (nothing was changed): ")
			assert.Contains(t, r.stderr, "mod.txt")
			assert.Empty(t, r.stdout)
			assert.Equal(t, before, tree(t, dir), "nothing changed on disk")
		})
	}

	t.Run("a subdirectory of a work tree is refused", func(t *testing.T) {
		t.Parallel()
		dir := f.checkout(t, false)
		before := tree(t, dir)
		sub := filepath.Join(dir, "keep")
		r := setup(t, f.results(f.cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", sub)
		assert.Equal(t, 2, r.code)
		assert.Equal(t, "jam: --to "+sub+" is inside the git work tree "+dir+" but not its top; git apply takes a patch's paths from the top, so apply it there (--to "+dir+")\n", r.stderr)
		assert.Equal(t, before, tree(t, dir))
	})

	t.Run("an omitted patch is refused, naming the checkpoints", func(t *testing.T) {
		t.Parallel()
		cs := f.cs
		cs.PatchOmitted = true
		dir := f.checkout(t, true)
		r := setup(t, f.results(cs, nil)).jam(t, "changeset", "apply", "cs_1", "--to", dir)
		assert.Equal(t, 2, r.code)
		assert.Equal(t, fmt.Sprintf("jam: change set cs_1 cannot be applied: its patch (%d bytes) was over the bound and is not kept; its checkpoints snap_1 and snap_2 reproduce it (git diff --binary --full-index %s %s): invalid argument\n",
			cs.PatchBytes, f.base, f.end), r.stderr)
	})

	// A manifest that disagrees with what the patch wrote: the apply is
	// reported as not matching, naming the path.
	for _, tc := range []struct {
		name, path, want string
		edit             func(*wire.ChangeSetFile)
	}{
		{name: "digest", path: "mod.txt", want: "content digest", edit: func(c *wire.ChangeSetFile) { c.NewSHA256 = strings.Repeat("0", 64) }},
		{name: "exec bit", path: "run.sh", want: "executable bit is true, the manifest says mode 100644", edit: func(c *wire.ChangeSetFile) { c.NewMode = "100644" }},
		{name: "symlink", path: "added.bin", want: "should be a symbolic link", edit: func(c *wire.ChangeSetFile) { c.NewMode = "120000" }},
		{name: "binary", path: "logo.bin", want: "content digest", edit: func(c *wire.ChangeSetFile) {
			sum := sha256.Sum256([]byte("\x89PNG\x00\x01\x02\xff\xfe"))
			c.NewSHA256 = hex.EncodeToString(sum[:])
		}},
	} {
		t.Run("manifest mismatch "+tc.name, func(t *testing.T) {
			t.Parallel()
			cs := f.cs
			cs.Files = append([]wire.ChangeSetFile(nil), f.cs.Files...)
			found := false
			for i := range cs.Files {
				if cs.Files[i].Path == tc.path {
					tc.edit(&cs.Files[i])
					found = true
				}
			}
			require.True(t, found)
			dir := f.checkout(t, true)
			r := setup(t, f.results(cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", dir)
			assert.Equal(t, 5, r.code)
			assert.Contains(t, r.stderr, "jam: applied change set cs_1 to "+dir+", but the result differs from its manifest: \""+tc.path+"\": "+tc.want)
		})
	}

	t.Run("a deleted path still there is reported", func(t *testing.T) {
		t.Parallel()
		cs := f.cs
		cs.Files = append([]wire.ChangeSetFile(nil), f.cs.Files...)
		// A manifest that says keep/keep.txt was deleted; the patch leaves it.
		cs.Files = append(cs.Files, wire.ChangeSetFile{Path: "keep/keep.txt", Kind: "deleted", OldMode: "100644"})
		dir := f.checkout(t, true)
		r := setup(t, f.results(cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", dir)
		assert.Equal(t, 5, r.code)
		assert.Contains(t, r.stderr, `"keep/keep.txt" should be gone, but is still there`)
	})

	t.Run("a path outside the tree is refused before anything runs", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"../x", "/etc/passwd", "a//b", "./a", "a/../../b", ""} {
			cs := f.cs
			cs.Files = []wire.ChangeSetFile{{Path: "ok.txt", OldPath: p, Kind: "renamed"}}
			if p == "" {
				cs.Files[0] = wire.ChangeSetFile{Path: p, Kind: "added"}
			}
			dir := f.checkout(t, true)
			before := tree(t, dir)
			r := setup(t, f.results(cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", dir)
			assert.Equal(t, 2, r.code, p)
			assert.Contains(t, r.stderr, "which is not inside the tree", p)
			assert.Equal(t, before, tree(t, dir), p)
		}
	})

	t.Run("a patch of the wrong size is refused", func(t *testing.T) {
		t.Parallel()
		dir := f.checkout(t, true)
		before := tree(t, dir)
		r := setup(t, f.results(f.cs, f.patch[:len(f.patch)-1])).jam(t, "changeset", "apply", "cs_1", "--to", dir)
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, fmt.Sprintf("has %d bytes, its record says %d", len(f.patch)-1, len(f.patch)))
		assert.Equal(t, before, tree(t, dir))
	})

	t.Run("no such directory", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "missing")
		r := setup(t, f.results(f.cs, f.patch)).jam(t, "changeset", "apply", "cs_1", "--to", missing)
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "--to "+missing)
	})

	t.Run("an empty change set changes nothing", func(t *testing.T) {
		t.Parallel()
		cs := f.cs
		cs.Files, cs.Additions, cs.Deletions, cs.PatchBytes = nil, 0, 0, 0
		dir := f.checkout(t, true)
		before := tree(t, dir)
		r := setup(t, f.results(cs, []byte{})).jam(t, "changeset", "apply", "cs_1", "--to", dir)
		require.Equal(t, "", r.stderr)
		assert.Equal(t, "applied cs_1 to "+dir+": no changes\n", r.stdout)
		assert.Equal(t, before, tree(t, dir))
	})

	t.Run("unknown change set", func(t *testing.T) {
		t.Parallel()
		r := setup(t, f.results(f.cs, f.patch)).jam(t, "changeset", "apply", "cs_9", "--to", t.TempDir())
		assert.Equal(t, 4, r.code)
	})
	assert.True(t, bytes.Contains(f.patch, []byte("GIT binary patch")), "the fixture's patch has binary hunks")
}
