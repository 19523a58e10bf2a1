package git_test

import (
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
