package git_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
)

const zeros = "0000000000000000000000000000000000000000"

func TestParseRaw(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	got, err := git.ParseRaw(":000000 100644 " + zeros + " " + a + " A\x00new dir/ü.txt\x00:100644 100755 " + a + " " + b + " M\x00run.sh\x00:100644 100644 " + a + " " + b + " R087\x00old\x00new name\x00")
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, git.RawEntry{OldMode: 0, NewMode: 0o100644, OldID: zeros, NewID: a, Status: 'A', Path: "new dir/ü.txt"}, got[0])
	assert.Equal(t, uint32(0o100755), got[1].NewMode)
	assert.Equal(t, git.RawEntry{OldMode: 0o100644, NewMode: 0o100644, OldID: a, NewID: b, Status: 'R', Score: 87, Path: "new name", OldPath: "old"}, got[2])
	empty, err := git.ParseRaw("")
	require.NoError(t, err)
	assert.Empty(t, empty)
	for _, bad := range []string{
		"not an entry\x00",
		":100644 100644 " + a + " " + b + " M\x00",                // no path
		":100644 100644 " + a + " " + b + " R050\x00only-one\x00", // a rename with one path
		":10064x 100644 " + a + " " + b + " M\x00p\x00",           // a mode that is not octal
		":100644 100644 " + a + " " + b + " Mxx\x00p\x00",         // a status that is not a letter and a score
		"\x00\x00",
	} {
		_, err := git.ParseRaw(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseNumstat(t *testing.T) {
	t.Parallel()
	got, err := git.ParseNumstat("3\t1\ta b.txt\x00-\t-\tbin.dat\x000\t0\t\x00old\x00new\x00")
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, git.NumStat{Additions: 3, Deletions: 1, Path: "a b.txt"}, got[0])
	assert.Equal(t, git.NumStat{Binary: true, Path: "bin.dat"}, got[1])
	assert.Equal(t, git.NumStat{Path: "new", OldPath: "old"}, got[2])
	for _, bad := range []string{"x\t1\tp\x00", "1\tp\x00", "1\t1\t\x00old\x00"} {
		_, err := git.ParseNumstat(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// FuzzParseRaw: any output decodes to entries with paths, or to an error;
// never a panic.
func FuzzParseRaw(f *testing.F) {
	f.Add(":000000 100644 " + zeros + " " + zeros + " A\x00p\x00")
	f.Add(":100644 100644 " + zeros + " " + zeros + " R100\x00a\x00b\x00")
	f.Add("")
	f.Fuzz(func(t *testing.T, out string) {
		entries, err := git.ParseRaw(out)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Path == "" {
				t.Fatalf("an entry without a path from %q", out)
			}
		}
	})
}

// FuzzParseNumstat: as FuzzParseRaw, for --numstat -z.
func FuzzParseNumstat(f *testing.F) {
	f.Add("1\t2\tp\x00")
	f.Add("-\t-\t\x00a\x00b\x00")
	f.Fuzz(func(t *testing.T, out string) {
		stats, err := git.ParseNumstat(out)
		if err != nil {
			return
		}
		for _, s := range stats {
			if s.Path == "" || s.Additions < 0 || s.Deletions < 0 {
				t.Fatalf("%+v from %q", s, out)
			}
		}
	})
}

func TestParseRawNumstat(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	rawA := ":000000 100644 " + zeros + " " + a + " A\x00:odd name\x00"
	rawR := ":100644 100644 " + a + " " + b + " R087\x00old\x00new\x00"
	raw, stats, err := git.ParseRawNumstat(rawA + rawR + "3\t0\t:odd name\x001\t1\t\x00old\x00new\x00")
	require.NoError(t, err)
	require.Len(t, raw, 2)
	assert.Equal(t, ":odd name", raw[0].Path, "a path that begins with a colon is a path, not an entry")
	assert.Equal(t, git.RawEntry{OldMode: 0o100644, NewMode: 0o100644, OldID: a, NewID: b, Status: 'R', Score: 87, Path: "new", OldPath: "old"}, raw[1])
	assert.Equal(t, []git.NumStat{{Additions: 3, Path: ":odd name"}, {Additions: 1, Deletions: 1, Path: "new", OldPath: "old"}}, stats)
	raw, stats, err = git.ParseRawNumstat("")
	require.NoError(t, err)
	assert.Empty(t, raw)
	assert.Empty(t, stats)
	for _, tc := range []struct{ name, in string }{
		{"entries without counts", rawA},
		{"counts without entries", "3\t0\tp\x00"},
		{"fewer counts", rawA + rawR + "3\t0\t:odd name\x00"},
		{"counts of another path", rawA + "3\t0\tother\x00"},
		{"counts of another rename source", rawR + "1\t1\t\x00elsewhere\x00new\x00"},
		{"malformed entry", ":100644\x00p\x001\t1\tp\x00"},
		{"a rename without its paths", ":100644 100644 " + a + " " + b + " R050\x00"},
		{"malformed counts", rawA + "x\t0\t:odd name\x00"},
	} {
		_, _, err := git.ParseRawNumstat(tc.in)
		assert.Error(t, err, tc.name)
	}
}

// FuzzParseRawNumstat: any output decodes to entries and counts of the
// same paths, one each, or to an error; never a panic.
func FuzzParseRawNumstat(f *testing.F) {
	f.Add(":000000 100644 " + zeros + " " + zeros + " A\x00p\x001\t0\tp\x00")
	f.Add(":100644 100644 " + zeros + " " + zeros + " R100\x00a\x00b\x000\t0\t\x00a\x00b\x00")
	f.Add("")
	f.Fuzz(func(t *testing.T, out string) {
		raw, stats, err := git.ParseRawNumstat(out)
		if err != nil {
			return
		}
		require.Len(t, stats, len(raw))
		for k := range raw {
			require.NotEmpty(t, raw[k].Path)
			require.Equal(t, raw[k].Path, stats[k].Path)
			require.Equal(t, raw[k].OldPath, stats[k].OldPath)
		}
	})
}

// TestDiff: the one pass gives what the three separate calls give: the
// same entries, the same counts and the same patch bytes, over a change
// with an edit, a binary file, a mode change, a pure rename, a type
// change, a deletion and an addition; and nothing for equal trees.
func TestDiff(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	write(t, dir, "edit.txt", "one\ntwo\nthree\n")
	write(t, dir, "gone.txt", "bye\n")
	write(t, dir, "mode.sh", "echo\n")
	write(t, dir, "renamed.txt", strings.Repeat("the same line\n", 20))
	write(t, dir, "type", "a file, then a link\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("\x00\x01\x02binary"), 0o644))
	run(t, dir, "add", "--all")
	run(t, dir, append(append([]string{}, person...), "commit", "-q", "-m", "base")...)
	base := run(t, dir, "rev-parse", "HEAD")
	write(t, dir, "edit.txt", "one\n2\nthree\nfour\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))
	require.NoError(t, os.Chmod(filepath.Join(dir, "mode.sh"), 0o755))
	require.NoError(t, os.Rename(filepath.Join(dir, "renamed.txt"), filepath.Join(dir, "moved to.txt")))
	require.NoError(t, os.Remove(filepath.Join(dir, "type")))
	require.NoError(t, os.Symlink("edit.txt", filepath.Join(dir, "type")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("\x00\x03binary too"), 0o644))
	write(t, dir, "new dir/ü.txt", "new\n")
	run(t, dir, "add", "--all")
	run(t, dir, append(append([]string{}, person...), "commit", "-q", "-m", "end")...)
	end := run(t, dir, "rev-parse", "HEAD")

	ctx := t.Context()
	wantRaw, err := git.DiffRaw(ctx, dir, base, end)
	require.NoError(t, err)
	wantStats, err := git.DiffNumstat(ctx, dir, base, end)
	require.NoError(t, err)
	var wantPatch, patch strings.Builder
	require.NoError(t, git.DiffPatch(ctx, dir, base, end, &wantPatch))
	raw, stats, err := git.Diff(ctx, dir, base, end, &patch)
	require.NoError(t, err)
	require.Len(t, raw, 7)
	require.Equal(t, wantRaw, raw)
	require.Equal(t, wantStats, stats)
	require.Equal(t, wantPatch.String(), patch.String())
	require.True(t, strings.HasPrefix(patch.String(), "diff --git "))
	require.Contains(t, patch.String(), "GIT binary patch")

	patch.Reset()
	raw, stats, err = git.Diff(ctx, dir, end, end, &patch)
	require.NoError(t, err)
	require.Empty(t, raw)
	require.Empty(t, stats)
	require.Empty(t, patch.String())

	_, _, err = git.Diff(ctx, dir, base, strings.Repeat("c", 40), &patch)
	require.Error(t, err)
}
